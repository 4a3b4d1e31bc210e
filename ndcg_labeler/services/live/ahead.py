"""Grades read ahead: an upload reads what scoring its run needs while it ranks the run.

Scoring a new run reads every grade of the test set (hundreds of thousands of rows at a
team's size). Ranking and writing the run are mostly numpy, pyarrow and SQLite work that
releases the GIL, so a thread of its own reads the grades meanwhile, off the critical path.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from flask import current_app

from ndcg_labeler.services.live.engine import Grades, default_grades

log = logging.getLogger(__name__)


class GradesAhead:
    """engine.default_grades of a test set, read in a thread from construction on.

    `result()` waits for them; None when the read failed (the scoring then reads them itself).
    An upload that fails before asking leaves the thread to finish its read alone: it is a
    daemon with a session of its own, and writes nothing.
    """

    def __init__(self, test_set_id: int) -> None:
        self._grades: Grades | None = None
        app: Any = current_app._get_current_object()  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._read, args=(app, test_set_id), name="grades-ahead", daemon=True
        )
        self._thread.start()

    def _read(self, app: Any, test_set_id: int) -> None:
        try:
            with app.helper_context():  # a session and connection of its own
                self._grades = default_grades(test_set_id)
        except Exception:  # the scoring reads them itself
            log.warning("reading the grades ahead failed", exc_info=True)

    def result(self) -> Grades | None:
        """The grades (waits for the read)."""
        self._thread.join()
        return self._grades
