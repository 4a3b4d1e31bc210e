"""save_judgment: one row per (query, chunk, annotator), history, labels_version, refusals."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, JudgmentEvent, Pair, Query, TestSet, User
from ndcg_labeler.services import ServiceError, labeling
from tests.factory import build, make_user


def _objs(built, qid="q1", docid="d1"):
    return (
        db.session.get(TestSet, built.test_set_id),
        db.session.get(Query, built.queries[qid]),
        db.session.get(Chunk, built.chunks[docid]),
    )


def _save(built, user_id, qid="q1", docid="d1", **kw):
    ts, q, c = _objs(built, qid, docid)
    kw.setdefault("status", "graded")
    return labeling.save_judgment(ts, q, c, db.session.get(User, user_id), **kw)


def _events():
    return list(db.session.scalars(sa.select(JudgmentEvent).order_by(JudgmentEvent.id)))


def _version(built):
    return db.session.scalar(
        sa.select(TestSet.labels_version).where(TestSet.id == built.test_set_id)
    )


def test_first_save_creates_one_judgment_event_and_bumps_version(app: Flask, annotator_id: int):
    built = build(app)
    with app.app_context():
        result = _save(built, annotator_id, grade=2, note="ok", active_ms=1500)
        assert result.created and result.changed
        rows = list(db.session.scalars(sa.select(Judgment)))
        assert [(r.status, r.grade, r.note, r.active_ms) for r in rows] == [
            ("graded", 2, "ok", 1500)
        ]
        events = _events()
        assert [(e.old_status, e.old_grade, e.new_status, e.new_grade) for e in events] == [
            (None, None, "graded", 2)
        ]
        assert events[0].actor_id == annotator_id and events[0].annotator_id == annotator_id
        assert _version(built) == 1


def test_double_submit_is_a_no_op(app: Flask, annotator_id: int):
    built = build(app)
    with app.app_context():
        _save(built, annotator_id, grade=1, active_ms=1000)
        again = _save(built, annotator_id, grade=1, active_ms=1000)
        assert not again.changed and not again.created
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Judgment)) == 1
        assert len(_events()) == 1
        assert _version(built) == 1
        # A double click is not time spent twice.
        assert db.session.scalar(sa.select(Judgment.active_ms)) == 1000


def test_regrade_updates_row_appends_event_and_accumulates_time(app: Flask, annotator_id: int):
    built = build(app)
    with app.app_context():
        first = _save(built, annotator_id, grade=1, active_ms=1000)
        second = _save(built, annotator_id, grade=3, active_ms=400)
        assert second.judgment_id == first.judgment_id and second.changed
        row = db.session.scalars(sa.select(Judgment)).one()
        assert (row.grade, row.active_ms) == (3, 1400)
        events = _events()
        assert [(e.old_grade, e.new_grade) for e in events] == [(None, 1), (1, 3)]
        assert _version(built) == 2


def test_cant_tell_with_note_then_grade(app: Flask, annotator_id: int):
    built = build(app)
    with app.app_context():
        _save(built, annotator_id, status="cant_tell", grade=None, note="needs domain expert")
        row = db.session.scalars(sa.select(Judgment)).one()
        assert (row.status, row.grade, row.note) == ("cant_tell", None, "needs domain expert")
        _save(built, annotator_id, grade=0)
        events = _events()
        assert [(e.old_status, e.new_status, e.new_grade) for e in events] == [
            (None, "cant_tell", None),
            ("cant_tell", "graded", 0),
        ]


def test_note_change_alone_is_a_change(app: Flask, annotator_id: int):
    built = build(app)
    with app.app_context():
        _save(built, annotator_id, grade=2)
        assert _save(built, annotator_id, grade=2, note="second thoughts").changed
        assert len(_events()) == 2


@pytest.mark.parametrize("grade", [-1, 4, None])
def test_grade_outside_scale_is_refused(app: Flask, annotator_id: int, grade):
    built = build(app)
    with app.app_context():
        with pytest.raises(ServiceError):
            _save(built, annotator_id, grade=grade)
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Judgment)) == 0
        assert _events() == []
        assert _version(built) == 0


def test_unknown_status_and_foreign_chunk_are_refused(app: Flask, annotator_id: int):
    built = build(app)
    other = build(app, "other", pool={"x": ["y"]})
    with app.app_context():
        with pytest.raises(ServiceError):
            _save(built, annotator_id, status="maybe")
        ts, q, _ = _objs(built)
        foreign = db.session.get(Chunk, other.chunks["y"])
        with pytest.raises(ServiceError):
            labeling.save_judgment(ts, q, foreign, db.session.get(User, annotator_id), grade=1)


def test_actor_is_recorded_separately(app: Flask, annotator_id: int, admin_id: int):
    built = build(app)
    with app.app_context():
        ts, q, c = _objs(built)
        labeling.save_judgment(
            ts,
            q,
            c,
            db.session.get(User, annotator_id),
            grade=2,
            actor=db.session.get(User, admin_id),
        )
        event = _events()[0]
        assert (event.actor_id, event.annotator_id) == (admin_id, annotator_id)


def test_skip_never_overwrites_an_answer(app: Flask, annotator_id: int):
    built = build(app)
    with app.app_context():
        pair = db.session.get(Pair, built.pairs[0])
        user = db.session.get(User, annotator_id)
        labeling.save_for_pair(pair, user, grade=2)
        assert labeling.skip_pair(pair, user) is None
        assert db.session.scalar(sa.select(Judgment.grade)) == 2
        other = db.session.get(Pair, built.pairs[1])
        labeling.skip_pair(other, user)
        mine = labeling.my_judgment(other, user)
        assert (mine.status, mine.grade) == ("skipped", None)


def test_previous_pair_walks_back_through_history(app: Flask, annotator_id: int):
    built = build(app)
    with app.app_context():
        user = db.session.get(User, annotator_id)
        ts = db.session.get(TestSet, built.test_set_id)
        p1, p2, p3 = (db.session.get(Pair, pid) for pid in built.pairs)
        assert labeling.previous_pair(ts, user) is None
        for pair in (p1, p2, p3):
            labeling.save_for_pair(pair, user, grade=1)
        assert labeling.previous_pair(ts, user).id == p3.id
        assert labeling.previous_pair(ts, user, current=p3).id == p2.id
        assert labeling.previous_pair(ts, user, current=p2).id == p1.id
        assert labeling.previous_pair(ts, user, current=p1) is None


def test_concurrent_identical_submits_make_one_row_and_one_event(app: Flask):
    """Eight threads submit the same grade at once: one row, one event, version 1."""
    built = build(app)
    user_id = make_user(app, "racer")
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def submit() -> None:
        try:
            with app.app_context():
                barrier.wait()
                _save(built, user_id, grade=2)
                db.session.remove()
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Judgment)) == 1
        assert len(_events()) == 1
        assert _version(built) == 1
