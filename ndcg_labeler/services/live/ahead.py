"""Scoring ahead: an upload scores its run in threads while it parses and writes the run.

Scoring a new run reads every grade of the test set (hundreds of thousands of rows at a
team's size), then joins them with millions of entries. Parsing and writing the run are mostly
pyarrow, numpy and SQLite work that releases the GIL, so one thread reads the grades while the
run is parsed, and another scores the ranked run in memory while it is written; the caller
only stores the figures once its transaction is committed.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from flask import current_app

from ndcg_labeler.services.live.engine import Grades, default_grades, new_run_state
from ndcg_labeler.services.live.entries import RunData
from ndcg_labeler.services.live.store import ScoreState

log = logging.getLogger(__name__)


class GradesAhead:
    """engine.default_grades of a test set, read in a thread from construction on; `score`
    then scores a run on them in a thread of its own (engine.new_run_state).

    `result()` and `scored()` wait for them; None when that step failed (the scoring then
    does it itself). An upload that fails meanwhile leaves the threads to finish alone: they
    are daemons, and write nothing.
    """

    def __init__(self, test_set_id: int) -> None:
        self._grades: Grades | None = None
        self._state: ScoreState | None = None
        self._scoring: threading.Thread | None = None
        app: Any = current_app._get_current_object()  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._read, args=(app, test_set_id), name="grades-ahead", daemon=True
        )
        self._thread.start()

    def _read(self, app: Any, test_set_id: int) -> None:
        try:
            with app.app_context():  # a session and connection of its own
                self._grades = default_grades(test_set_id)
        except Exception:  # the scoring reads them itself
            log.warning("reading the grades ahead failed", exc_info=True)

    def score(self, run_id: int, data: RunData) -> None:
        """Start scoring the run (its entries as `data`) once the grades are read."""
        self._scoring = threading.Thread(
            target=self._score, args=(run_id, data), name="scores-ahead", daemon=True
        )
        self._scoring.start()

    def _score(self, run_id: int, data: RunData) -> None:
        grades = self.result()
        if grades is None:
            return
        try:
            self._state = new_run_state(run_id, grades, data)
        except Exception:  # the scoring does it again itself
            log.warning("scoring the run ahead failed", exc_info=True)

    def result(self) -> Grades | None:
        """The grades (waits for the read)."""
        self._thread.join()
        return self._grades

    def scored(self) -> ScoreState | None:
        """The run's figures on those grades (waits for them); None if `score` was not called."""
        if self._scoring is not None:
            self._scoring.join()
        return self._state
