"""Disagreement review: which pairs are disputed, in what order; adjudication and its history;
its effect on live scores and the exported qrels."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Adjudication, Chunk, JudgmentEvent, Query, Run, TestSet, User
from ndcg_labeler.services import ServiceError, accounts, live
from ndcg_labeler.services import team as team_service
from ndcg_labeler.services.live import ScoreOptions, score_run
from tests.factory import build_runs, build_team, judge, make_user


def _queue(app: Flask, test_set_id: int, **kwargs) -> list[tuple[str, str, int, int]]:
    with app.app_context():
        page = team_service.review_queue(db.session.get_one(TestSet, test_set_id), **kwargs)
        return [(i.qid, i.docid, i.spread, i.cant_tell) for i in page.items]


def _set_threshold(app: Flask, test_set_id: int, value: int) -> None:
    with app.app_context():
        team_service.set_threshold(db.session.get_one(TestSet, test_set_id), value, None)


def _pair(test_set_id: int, qid: str, docid: str) -> tuple[TestSet, Query, Chunk]:
    test_set = db.session.get_one(TestSet, test_set_id)
    query = db.session.scalar(
        sa.select(Query).where(Query.test_set_id == test_set_id, Query.qid == qid)
    )
    chunk = db.session.scalar(
        sa.select(Chunk).where(Chunk.test_set_id == test_set_id, Chunk.docid == docid)
    )
    return test_set, query, chunk


def _admin(app: Flask) -> User:
    return db.session.scalar(sa.select(User).where(User.role == "admin"))


def test_queue_threshold_and_cant_tell(app: Flask):
    """Spans: d1 0, d2 1 (2,1,2), d3 0, d4 2 (1,3), d5 0, d6 0 with a can't-tell."""
    team = build_team(app)
    assert _queue(app, team.id) == [("q2", "d4", 2, 0), ("q2", "d6", 0, 1)]  # default 2
    _set_threshold(app, team.id, 1)
    assert _queue(app, team.id) == [("q2", "d4", 2, 0), ("q1", "d2", 1, 0), ("q2", "d6", 0, 1)]
    _set_threshold(app, team.id, 3)
    assert _queue(app, team.id) == [("q2", "d6", 0, 1)]  # can't tell is always reviewed
    with app.app_context():
        assert db.session.get_one(TestSet, team.id).disagreement_threshold == 3


def test_most_disputed_first_imports_included(app: Flask):
    """An imported 0 on d1 (3,3,3,0) spans 3; d7 (1,3 and a can't-tell) spans 2 with one
    can't-tell, so it comes before d4 (span 2, none)."""
    team = build_team(app)
    with app.app_context():
        accounts.import_source("old.qrels")
        db.session.commit()
    judge(app, team.id, "q1", "d1", "import:old.qrels", grade=0)
    judge(app, team.id, "q2", "d7", "alice", grade=1)
    judge(app, team.id, "q2", "d7", "bob", grade=3)
    judge(app, team.id, "q2", "d7", "carol", status="cant_tell")
    assert _queue(app, team.id) == [
        ("q1", "d1", 3, 0),
        ("q2", "d7", 2, 1),
        ("q2", "d4", 2, 0),
        ("q2", "d6", 0, 1),
    ]
    assert _queue(app, team.id, per_page=2, page=2) == [("q2", "d4", 2, 0), ("q2", "d6", 0, 1)]


@pytest.mark.parametrize("value", [0, 4, True])
def test_threshold_is_checked(app: Flask, value):
    team = build_team(app)
    with app.app_context(), pytest.raises(ServiceError, match="from 1 to 3"):
        team_service.set_threshold(db.session.get_one(TestSet, team.id), value, None)


def test_adjudication_leaves_the_queue_and_keeps_history(app: Flask, admin_id: int):
    team = build_team(app)
    with app.app_context():
        test_set, query, chunk = _pair(team.id, "q2", "d4")
        admin = _admin(app)
        before = test_set.labels_version
        first = team_service.adjudicate(test_set, query, chunk, 2, "  reads as partial ", admin)
        assert (first.old_grade, first.new_grade, first.changed) == (None, 2, True)
        same = team_service.adjudicate(test_set, query, chunk, 2, "reads as partial", admin)
        assert not same.changed
        changed = team_service.adjudicate(test_set, query, chunk, 3, "on second reading", admin)
        assert (changed.old_grade, changed.new_grade) == (2, 3)
        row = db.session.scalar(sa.select(Adjudication))
        assert (row.grade, row.note, row.adjudicator_id) == (3, "on second reading", admin_id)
        db.session.refresh(test_set)
        assert test_set.labels_version == before + 2  # the no-op did not bump it
    assert _queue(app, team.id) == [("q2", "d6", 0, 1)]
    with app.app_context():
        test_set = db.session.get_one(TestSet, team.id)
        page = team_service.review_queue(test_set, include_adjudicated=True)
        assert [(i.docid, i.adjudicated) for i in page.items] == [("d4", 3), ("d6", None)]
        test_set, query, chunk = _pair(team.id, "q2", "d4")
        removed = team_service.remove(test_set, query, chunk, _admin(app))
        assert (removed.old_grade, removed.new_grade, removed.changed) == (3, None, True)
        assert not team_service.remove(test_set, query, chunk, _admin(app)).changed
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Adjudication)) == 0
        events = db.session.execute(
            sa.select(
                JudgmentEvent.kind,
                JudgmentEvent.actor_id,
                JudgmentEvent.annotator_id,
                JudgmentEvent.old_status,
                JudgmentEvent.new_status,
                JudgmentEvent.old_grade,
                JudgmentEvent.new_grade,
                JudgmentEvent.note,
            )
            .where(JudgmentEvent.kind == "adjudication")
            .order_by(JudgmentEvent.id)
        ).all()
        assert events == [
            ("adjudication", admin_id, None, None, "adjudicated", None, 2, "reads as partial"),
            (
                "adjudication",
                admin_id,
                None,
                "adjudicated",
                "adjudicated",
                2,
                3,
                "on second reading",
            ),
            ("adjudication", admin_id, None, "adjudicated", None, 3, None, ""),
        ]
        detail = team_service.pair_detail(test_set, query, chunk)
        # alice's and carol's judgments, then the three adjudication events, oldest first.
        assert [(h.kind, h.new_grade) for h in detail.history] == [
            ("judgment", 1),
            ("judgment", 3),
            ("adjudication", 2),
            ("adjudication", 3),
            ("adjudication", None),
        ]
        assert [(g.username, g.grade) for g in detail.grades] == [("alice", 1), ("carol", 3)]
        assert detail.adjudication is None and detail.final == 1  # median of 1, 3 (lower)
    assert _queue(app, team.id) == [("q2", "d4", 2, 0), ("q2", "d6", 0, 1)]


def test_adjudication_refusals(app: Flask, admin_id: int):
    team = build_team(app)
    other = build_runs(app, "other")
    with app.app_context():
        test_set, query, chunk = _pair(team.id, "q2", "d4")
        admin = _admin(app)
        with pytest.raises(ServiceError, match="outside this test set's scale 0–3"):
            team_service.adjudicate(test_set, query, chunk, 4, "", admin)
        with pytest.raises(ServiceError, match="only an admin"):
            alice = db.session.scalar(sa.select(User).where(User.username == "alice"))
            team_service.adjudicate(test_set, query, chunk, 1, "", alice)
        _, foreign_query, _ = _pair(other.id, "q1", "d1")
        with pytest.raises(ServiceError, match="must belong to the test set"):
            team_service.adjudicate(test_set, foreign_query, chunk, 1, "", admin)
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Adjudication)) == 0


def test_adjudication_changes_live_scores_and_qrels(app: Flask, admin_id: int):
    """Run A ranks d1, d2. d1 is graded 0 and 2, d2 1 and 1. Median (lower middle): d1 = 0, so
    NDCG@10 = (1/log2 3) / 1 = 0.6309. Final grade 2 for d1: DCG = 2 + 1/log2 3 = IDCG -> 1.
    Removing it brings back 0.6309."""
    team = build_runs(app)
    with app.app_context():
        run = db.session.scalar(sa.select(Run).where(Run.name == "A"))
        assert score_run(run, ScoreOptions(k=10)).mean_ndcg == pytest.approx(1 / math.log2(3))
        test_set, query, chunk = _pair(team.id, "q1", "d1")
        team_service.adjudicate(test_set, query, chunk, 2, "clearly relevant", _admin(app))
        assert score_run(run, ScoreOptions(k=10)).mean_ndcg == pytest.approx(1.0)
        # The final grade wins under every policy, e.g. min (which would give 0).
        assert score_run(run, ScoreOptions(k=10, policy="min")).mean_ndcg == pytest.approx(1.0)
        assert live.qrels_text(test_set) == "q1 0 d1 2\nq1 0 d2 1\n"
        team_service.remove(test_set, query, chunk, _admin(app))
        assert score_run(run, ScoreOptions(k=10)).mean_ndcg == pytest.approx(1 / math.log2(3))
        assert live.qrels_text(test_set) == "q1 0 d1 0\nq1 0 d2 1\n"


def _seen(app: Flask, test_set_id: int, qid: str, docid: str) -> str:
    """What an adjudicator's page of the pair carries of its grades, loaded now."""
    with app.app_context():
        return team_service.pair_detail(*_pair(test_set_id, qid, docid)).seen


def _adjudications(app: Flask) -> list[tuple[int, str]]:
    with app.app_context():
        return [(a.grade, a.note) for a in db.session.scalars(sa.select(Adjudication))]


def test_adjudication_refuses_a_grade_changed_since_the_page_was_shown(
    app: Flask, admin_id: int
) -> None:
    """alice 1 and carol 3 were shown; carol moved to 0 before the final grade was saved: the
    final grade used to override her new grade silently."""
    team = build_team(app)
    seen = _seen(app, team.id, "q2", "d4")
    judge(app, team.id, "q2", "d4", "carol", grade=0, note="misread it")
    with app.app_context():
        test_set, query, chunk = _pair(team.id, "q2", "d4")
        with pytest.raises(team_service.GradesChanged) as refused:
            team_service.adjudicate(test_set, query, chunk, 3, "carol is right", _admin(app), seen)
        message = str(refused.value)
        assert "changed since" in message and "now alice 1, carol 0" in message
        assert "Nothing was saved" in message
        assert refused.value.grades == [("alice", "graded", 1), ("carol", "graded", 0)]
    assert _adjudications(app) == []
    # Confirmed over the grades now shown, it is saved.
    fresh = _seen(app, team.id, "q2", "d4")
    assert fresh != seen
    with app.app_context():
        test_set, query, chunk = _pair(team.id, "q2", "d4")
        done = team_service.adjudicate(test_set, query, chunk, 3, "carol", _admin(app), fresh)
        assert done.changed
    assert _adjudications(app) == [(3, "carol")]


def test_adjudication_refuses_what_changed_meanwhile_of_any_kind(app: Flask, admin_id: int) -> None:
    """A new answer (even a can't-tell) and another admin's final grade count too; the final
    grade already stored never conflicts (a double-clicked save)."""
    team = build_team(app)
    make_user(app, "dave", "admin")
    seen = _seen(app, team.id, "q2", "d4")
    judge(app, team.id, "q2", "d4", "bob", status="cant_tell")  # a new answer
    with app.app_context():
        test_set, query, chunk = _pair(team.id, "q2", "d4")
        with pytest.raises(team_service.GradesChanged, match="alice 1, bob can't tell, carol 3"):
            team_service.adjudicate(test_set, query, chunk, 2, "", _admin(app), seen)
        seen = team_service.pair_detail(test_set, query, chunk).seen
        other = db.session.scalar(sa.select(User).where(User.username == "dave"))
        team_service.adjudicate(test_set, query, chunk, 1, "dave's call", other)
        with pytest.raises(team_service.GradesChanged, match="final grade 1"):
            team_service.adjudicate(test_set, query, chunk, 2, "", _admin(app), seen)
        # Saving what is stored already (the same grade and note) is no change, no refusal.
        same = team_service.adjudicate(test_set, query, chunk, 1, "dave's call", other, seen)
        assert not same.changed
        # A form that carried nothing of what was shown is refused too.
        with pytest.raises(team_service.GradesChanged):
            team_service.adjudicate(test_set, query, chunk, 2, "", _admin(app), "")
    assert _adjudications(app) == [(1, "dave's call")]
