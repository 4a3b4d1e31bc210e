"""The grades scoring uses: aggregation through resolve, what counts, adjudication, speed."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Adjudication, Chunk, Pair, Query, TestSet, User
from ndcg_labeler.services import ServiceError, accounts, labeling
from ndcg_labeler.services.live import grades
from tests.factory import build, make_app, make_user


def _grade(built, user_id, qid, docid, grade, status="graded"):
    labeling.save_judgment(
        db.session.get(TestSet, built.test_set_id),
        db.session.get(Query, built.queries[qid]),
        db.session.get(Chunk, built.chunks[docid]),
        db.session.get(User, user_id),
        status=status,
        grade=grade,
    )


@pytest.fixture
def panel(app: Flask) -> list[int]:
    """Three annotators."""
    return [make_user(app, name) for name in ("ann1", "ann2", "ann3")]


def _setup(app, panel, aggregation="median"):
    built = build(
        app, pool={"q1": ["a", "b", "c", "d"], "q2": ["e"]}, aggregation=aggregation, target=3
    )
    with app.app_context():
        a1, a2, a3 = panel
        for user, grade in zip(panel, (1, 2, 3), strict=True):
            _grade(built, user, "q1", "a", grade)
        _grade(built, a1, "q1", "b", 1)
        _grade(built, a2, "q1", "b", 2)
        _grade(built, a1, "q1", "c", 0)  # judged non-relevant: present with 0
        _grade(built, a2, "q1", "c", None, status="cant_tell")  # never counts
        _grade(built, a3, "q1", "c", None, status="skipped")
        _grade(built, a1, "q1", "d", None, status="cant_tell")  # nobody graded: absent
        _grade(built, a3, "q2", "e", 2)
    return built


@pytest.mark.parametrize(
    ("policy", "expected_a", "expected_b"),
    [
        # a: grades 1, 2, 3; b: grades 1, 2 (ties: median takes the lower middle, mean rounds
        # exact halves down, majority takes the lowest tied grade).
        ("median", 2, 1),
        ("mean", 2, 1),
        ("max", 3, 2),
        ("min", 1, 1),
        ("majority", 1, 1),
    ],
)
def test_policies(app: Flask, panel, policy, expected_a, expected_b):
    built = _setup(app, panel)
    with app.app_context():
        ts = db.session.get(TestSet, built.test_set_id)
        qrels = grades.scoring_qrels(ts, policy)
        assert qrels == {"q1": {"a": expected_a, "b": expected_b, "c": 0}, "q2": {"e": 2}}


def test_default_policy_is_the_test_sets(app: Flask, panel):
    built = _setup(app, panel, aggregation="max")
    with app.app_context():
        ts = db.session.get(TestSet, built.test_set_id)
        assert grades.scoring_qrels(ts) == {"q1": {"a": 3, "b": 2, "c": 0}, "q2": {"e": 2}}
        assert grades.query_grades(ts.id, built.queries["q1"]) == {"a": 3, "b": 2, "c": 0}
        assert grades.query_grades(ts.id, built.queries["q1"], "min") == {"a": 1, "b": 1, "c": 0}


def test_adjudication_overrides_every_policy(app: Flask, panel, admin_id: int):
    built = _setup(app, panel)
    with app.app_context():
        ts = db.session.get(TestSet, built.test_set_id)
        for qid, docid, grade in (("q1", "a", 0), ("q1", "d", 3)):
            db.session.add(
                Adjudication(
                    test_set_id=ts.id,
                    query_id=built.queries[qid],
                    chunk_id=built.chunks[docid],
                    grade=grade,
                    adjudicator_id=admin_id,
                )
            )
        db.session.commit()
        for policy in ("median", "max"):
            qrels = grades.scoring_qrels(ts, policy)
            assert qrels["q1"]["a"] == 0
            assert qrels["q1"]["d"] == 3
        assert grades.query_grades(ts.id, built.queries["q1"])["d"] == 3


def test_import_sources_are_aggregated_too(app: Flask, annotator_id: int):
    built = build(app, pool={"q1": ["a"]})
    with app.app_context():
        source = accounts.import_source("qrels.txt")
        db.session.commit()
        _grade(built, source.id, "q1", "a", 3)
        _grade(built, annotator_id, "q1", "a", 1)
        ts = db.session.get(TestSet, built.test_set_id)
        assert grades.scoring_qrels(ts, "max") == {"q1": {"a": 3}}
        assert grades.scoring_qrels(ts, "min") == {"q1": {"a": 1}}


def test_unknown_policy_and_test_set_are_refused(app: Flask):
    built = build(app)
    with app.app_context():
        ts = db.session.get(TestSet, built.test_set_id)
        with pytest.raises(ServiceError):
            grades.scoring_qrels(ts, "vote")
        with pytest.raises(ServiceError):
            grades.query_grades(ts.id + 1000, built.queries["q1"])


def test_query_of_another_test_set_has_no_grades(app: Flask, annotator_id: int):
    built = build(app, pool={"q1": ["a"]})
    other = build(app, "other", pool={"x": ["y"]})
    with app.app_context():
        _grade(built, annotator_id, "q1", "a", 2)
        assert grades.query_grades(other.test_set_id, built.queries["q1"]) == {}


def test_records_sort_by_qid_then_docid_bytes():
    qrels = {"q10": {"b": 1}, "q2": {"b": 0, "a": 3, "B": 2}}
    assert [tuple(r) for r in grades.sorted_records(qrels)] == [
        ("q10", "b", 1),
        ("q2", "B", 2),
        ("q2", "a", 3),
        ("q2", "b", 0),
    ]


@pytest.fixture
def sqlite_app(sqlite_template: Path, tmp_path: Path) -> Iterator[Flask]:
    """The app on a fresh SQLite copy only: the speed test measures in-process CPU time, which
    on PostgreSQL would leave out the server's share."""
    path = tmp_path / "speed.sqlite3"
    shutil.copy(sqlite_template, path)
    flask_app = make_app(tmp_path, f"sqlite:///{path}")
    yield flask_app
    with flask_app.app_context():
        db.engine.dispose()


@pytest.mark.slow
def test_seven_thousand_queries_by_forty_judgments_all_aggregated(sqlite_app: Flask):
    """280,000 judgments of 7,000 queries all come back aggregated (speed: see bench/)."""
    app = sqlite_app
    annotator_id = make_user(app, "ann")
    with app.app_context():
        ts = TestSet(name="big", scale_max=3, grade_labels=[], judgments_per_pair=1)
        db.session.add(ts)
        db.session.flush()
        nq, per = 7000, 40
        # Generated inside the database (recursive CTE, same SQL on SQLite and PostgreSQL):
        # 280,000 ORM-side rows would take longer to insert than the whole rest of the suite.
        series = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < :top) "
        params = {"ts": ts.id}
        db.session.execute(
            sa.text(
                # sort_key: listings' natural order, which this test does not read.
                series + "INSERT INTO query (test_set_id, qid, text, sort_key) "
                "SELECT :ts, 'q' || i, 't', 'q' || i FROM n"
            ),
            {**params, "top": nq - 1},
        )
        db.session.execute(
            sa.text(
                series + "INSERT INTO chunk (test_set_id, docid, text, sort_key) "
                "SELECT :ts, 'd' || i, 't', 'd' || i FROM n"
            ),
            {**params, "top": nq * per - 1},
        )
        # Chunk number k (d<k>) belongs to query number k // 40 and gets grade k % 4.
        db.session.execute(
            sa.text(
                "INSERT INTO judgment (test_set_id, query_id, chunk_id, annotator_id, status, "
                "grade, note, active_ms, created_at, updated_at) "
                "SELECT :ts, q0.first + (c.id - c0.first) / :per, c.id, :ann, 'graded', "
                "(c.id - c0.first) % 4, '', 0, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP "
                "FROM chunk c, (SELECT min(id) AS first FROM query WHERE test_set_id = :ts) q0, "
                "(SELECT min(id) AS first FROM chunk WHERE test_set_id = :ts) c0 "
                "WHERE c.test_set_id = :ts"
            ),
            {**params, "per": per, "ann": annotator_id},
        )
        db.session.commit()
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Pair)) == 0
        qrels = grades.scoring_qrels(ts)
        assert len(qrels) == nq and sum(len(d) for d in qrels.values()) == nq * per
        assert qrels["q1"]["d41"] == 1
