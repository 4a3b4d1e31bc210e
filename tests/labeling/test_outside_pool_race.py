"""Two people grading outside the pool at the same moment: the stored counter keeps both.

`graded_outside` moves when a pair outside the pool gains its first grade. Two transactions
that have each written their judgment, then count at once, must neither lose an increment
(two different pairs: +2) nor count one pair twice (the same pair: +1). Each grade runs in a
thread of its own, with its own session and connection; a barrier holds both just before the
counters move, so the two transactions overlap on every run, not by luck.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query, TestSet, User
from ndcg_labeler.services import dashboard, tallies
from tests.factory import build_dashboard, make_user, pair_ids

# SQLite has one writer at a time (the second grade waits for the first to commit, so the two
# never overlap); without TEST_DATABASE_URL there is no PostgreSQL to test.
pytestmark = pytest.mark.parametrize(
    "app", ["postgresql"] if os.environ.get("TEST_DATABASE_URL") else [], indirect=True
)


def _grade(app: Flask, test_set_id: int, qid: str, docid: str, user_id: int) -> None:
    """One person's grade 2 of (qid, docid), in place, in a session of this thread."""
    _, chunk_id = pair_ids(app, test_set_id, qid, docid)
    with app.app_context():
        query = db.session.scalar(
            sa.select(Query).where(Query.test_set_id == test_set_id, Query.qid == qid)
        )
        test_set = db.session.get_one(TestSet, test_set_id)
        dashboard.grade_chunk(test_set, query, chunk_id, 2, db.session.get_one(User, user_id))


def _at_once(
    app: Flask,
    monkeypatch: pytest.MonkeyPatch,
    test_set_id: int,
    grades: list[tuple[str, str, int]],
) -> int:
    """Give the grades (qid, docid, user id) in threads that have all written their judgment
    before any counts it; the stored graded_outside afterwards."""
    original: Callable[..., None] = tallies.count_judgment_change
    barrier = threading.Barrier(len(grades), timeout=20)

    def held(*args: Any, **kwargs: Any) -> None:
        barrier.wait()  # every judgment written, none counted yet
        original(*args, **kwargs)

    monkeypatch.setattr(tallies, "count_judgment_change", held)
    errors: list[BaseException] = []

    def run(qid: str, docid: str, user_id: int) -> None:
        try:
            _grade(app, test_set_id, qid, docid, user_id)
        except BaseException as exc:  # re-raised by the test below, in its own thread
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=grade) for grade in grades]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    with app.app_context():
        return tallies.pool_counts(test_set_id).graded_outside


def test_two_pairs_graded_at_once_count_two(app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    dash = build_dashboard(app)  # chunk y is in no pool pair: (q1, y) and (q2, y) are outside
    ann1, ann2 = make_user(app, "ann1"), make_user(app, "ann2")
    assert _at_once(app, monkeypatch, dash.test_set_id, [("q1", "y", ann1), ("q2", "y", ann2)]) == 2


def test_one_pair_graded_by_two_at_once_counts_one(
    app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    dash = build_dashboard(app)
    ann1, ann2 = make_user(app, "ann1"), make_user(app, "ann2")
    assert _at_once(app, monkeypatch, dash.test_set_id, [("q1", "y", ann1), ("q1", "y", ann2)]) == 1
