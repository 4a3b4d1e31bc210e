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
from collections.abc import Sequence
from typing import Any

from flask import current_app

from ndcg_labeler.models import Run
from ndcg_labeler.services.live.engine import default_grades, new_run_state, score_new_run
from ndcg_labeler.services.live.entries import uploaded_run_data
from ndcg_labeler.services.live.grades import Grades
from ndcg_labeler.services.live.ranked import RankedBuffer, RunData
from ndcg_labeler.services.live.store import ScoreState

log = logging.getLogger(__name__)


class GradesAhead:
    """An upload's scoring of its run, ahead of the commit.

    engine.default_grades of the test set is read in a thread from construction on; `score`
    then scores the run on them in a thread of its own (engine.new_run_state), and `store`,
    once the run is committed, stores the figures (engine.score_new_run), waiting for both.
    A step that failed leaves its part to `store`, which reads or scores it itself. An upload
    that fails meanwhile leaves the threads to finish alone: they are daemons, and write
    nothing.
    """

    def __init__(self, test_set_id: int) -> None:
        self._grades: Grades | None = None
        self._data: RunData | None = None
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

    def score(
        self,
        run: Run,
        query_ids: list[int],
        blobs: Sequence[bytes | memoryview],
        buffer: RankedBuffer | None = None,
    ) -> None:
        """Start scoring the run from the ranked lists the upload has at hand (see
        entries.uploaded_run_data) once the grades are read."""
        self._data = uploaded_run_data(run, query_ids, blobs, buffer)
        self._scoring = threading.Thread(
            target=self._score, args=(run.id, self._data), name="scores-ahead", daemon=True
        )
        self._scoring.start()

    def _score(self, run_id: int, data: RunData) -> None:
        self._thread.join()
        if self._grades is None:
            return
        try:
            self._state = new_run_state(run_id, self._grades, data)
        except Exception:  # the scoring does it again itself
            log.warning("scoring the run ahead failed", exc_info=True)

    def store(self, run: Run) -> None:
        """Store the run's figures under the default setting (after `score`, once the run is
        committed): the first score page, in any process, reads them, not the run's entries."""
        if self._data is None:
            raise RuntimeError("GradesAhead.store before GradesAhead.score")
        self._thread.join()
        if self._scoring is not None:
            self._scoring.join()
        score_new_run(run, self._data, self._grades, self._state)
