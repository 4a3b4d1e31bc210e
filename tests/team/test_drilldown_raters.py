"""A grade given in a run's drill-down (an admin's correction) scores but makes nobody a rater."""

from __future__ import annotations

import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, Pair, Query, TestSet, User
from ndcg_labeler.services import dashboard, labeling, live
from ndcg_labeler.services.team.agreement import agreement_report
from tests.factory import build, make_user


def test_an_admins_drill_down_grade_is_no_rating(app: Flask) -> None:
    built = build(app, pool={"q1": ["a", "b"]}, target=2)
    alice, bob = make_user(app, "alice"), make_user(app, "bob")
    boss = make_user(app, "boss", "admin")
    with app.app_context():
        test_set = db.session.get(TestSet, built.test_set_id)
        pa, pb = (db.session.get(Pair, pid) for pid in built.pairs)
        for user, grades in ((alice, (3, 1)), (bob, (3, 0))):
            for pair, grade in zip((pa, pb), grades, strict=True):
                labeling.save_for_pair(pair, db.session.get(User, user), grade=grade)
        query = db.session.scalar(sa.select(Query).where(Query.qid == "q1"))
        chunk_b = db.session.scalar(sa.select(Chunk).where(Chunk.docid == "b"))
        dashboard.grade_chunk(test_set, query, chunk_b.id, 2, db.session.get(User, boss))
        db.session.commit()

        report = agreement_report(test_set)
        assert report.raters == ["alice", "bob"]
        assert report.ratings == 4
        # By hand: alice and bob agree on a (3, 3), not on b (1, 0): 50%.
        (two,) = report.annotator_pairs
        assert (two.a, two.b, two.n, two.percent) == ("alice", "bob", 2, 0.5)
        # The correction still scores: the max of b's grades 1, 0 and 2 is the admin's 2.
        grades = live.grades_by_query(test_set, policy="max")
        assert grades[query.id]["b"] == 2
        via = db.session.scalar(
            sa.select(Judgment.via).where(
                Judgment.annotator_id == boss, Judgment.chunk_id == chunk_b.id
            )
        )
        assert via == "drilldown"

        # Re-graded through the queue, the same judgment is a rating again.
        labeling.save_for_pair(pb, db.session.get(User, boss), grade=1)
        db.session.commit()
        assert agreement_report(test_set).raters == ["alice", "bob", "boss"]
