"""An upload reads the test set's grades in a thread while it ranks the run, and scores the
run in another while it writes it (live.GradesAhead): the first scores must still be right when
a grade arrives meanwhile, and when either step fails."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Query, TestSet, User
from ndcg_labeler.services import labeling, live
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.live import ahead as ahead_module
from ndcg_labeler.services.live import engine
from tests.factory import build_test_set, make_user

SET_NAME = "Ahead"
QUERIES = {"q1": "first query"}
CORPUS = {"d1": "one", "d2": "two", "d3": "three"}
QRELS = [("q1", "d1", 2)]
RUN = "q1 Q0 d1 1 3.0 sys\nq1 Q0 d2 2 2.0 sys\nq1 Q0 d3 3 1.0 sys\n"

# trec_eval's ndcg_cut: gain = grade, discount log2(rank + 1), ideal = the grades sorted.
ONLY_D1 = 2 / 2  # d1 (2) at rank 1; ideal the same
WITH_D2 = (2 + 3 / math.log2(3)) / (3 + 2 / math.log2(3))  # d2 graded 3 at rank 2


@pytest.fixture
def uploaded(app: Flask, tmp_path: Path) -> tuple[Flask, Path, int]:
    with app.app_context():
        build_test_set(SET_NAME, QUERIES, QRELS, corpus=CORPUS)
    run_file = tmp_path / "bm25.trec"
    run_file.write_text(RUN)
    return app, run_file, make_user(app, "grader")


def _grade_d2(test_set_id: int, grader_id: int) -> None:
    """An annotator grades (q1, d2) 3, committed on the calling thread's own session."""
    test_set = db.session.get_one(TestSet, test_set_id)
    query = db.session.scalar(sa.select(Query).where(Query.qid == "q1"))
    chunk = db.session.scalar(sa.select(Chunk).where(Chunk.docid == "d2"))
    assert query is not None and chunk is not None
    labeling.save_judgment(test_set, query, chunk, db.session.get_one(User, grader_id), grade=3)


def _upload_and_score(app: Flask, run_file: Path) -> float | None:
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == SET_NAME))
        run = run_service.upload_run(test_set, str(run_file), None, "bm25", None)
        return live.score_run(run, live.ScoreOptions(k=3)).mean_ndcg


def test_a_grade_given_while_the_run_uploads_is_in_its_first_scores(
    uploaded: tuple[Flask, Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    app, run_file, grader_id = uploaded
    read = ahead_module.default_grades

    def read_then_grade(test_set_id: int):  # type: ignore[no-untyped-def]
        grades = read(test_set_id)
        _grade_d2(test_set_id, grader_id)  # after the read: the grades ahead lack it
        return grades

    monkeypatch.setattr(ahead_module, "default_grades", read_then_grade)
    assert _upload_and_score(app, run_file) == pytest.approx(WITH_D2, abs=1e-12)


@pytest.mark.parametrize(
    ("step", "error"),
    [
        ("default_grades", RuntimeError("the database went away")),
        ("new_run_state", MemoryError("no room for the run's arrays")),
    ],
    ids=["reading-the-grades", "scoring-the-run"],
)
def test_the_run_is_scored_when_a_step_ahead_fails(
    uploaded: tuple[Flask, Path, int],
    monkeypatch: pytest.MonkeyPatch,
    step: str,
    error: Exception,
) -> None:
    app, run_file, _ = uploaded

    def broken(*args):  # type: ignore[no-untyped-def]
        raise error

    monkeypatch.setattr(ahead_module, step, broken)
    assert _upload_and_score(app, run_file) == pytest.approx(ONLY_D1, abs=1e-12)


def test_the_upload_scores_its_run_once_while_writing_it(
    uploaded: tuple[Flask, Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The figures scored on the writing thread's side are the ones stored: the run's entries
    are not joined with the grades a second time once the run is committed."""
    app, run_file, _ = uploaded
    full = engine.score_fully
    threads: list[str] = []

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread().name)
        return full(*args, **kwargs)

    monkeypatch.setattr(engine, "score_fully", counted)
    assert _upload_and_score(app, run_file) == pytest.approx(ONLY_D1, abs=1e-12)
    assert threads == ["scores-ahead"]
