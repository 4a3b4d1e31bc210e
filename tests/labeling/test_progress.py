"""Progress: mine (answered / open to me) and the test set's (pairs at target / pairs)."""

from __future__ import annotations

from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Pair, TestSet, User
from ndcg_labeler.services import accounts, labeling
from tests.factory import build, make_user


def test_progress_counts(app: Flask, annotator_id: int):
    built = build(app, pool={"q1": ["a", "b", "c"], "q2": ["d"]}, target=2)
    x = make_user(app, "x")
    y = make_user(app, "y")
    with app.app_context():
        pa, pb, pc, pd = (db.session.get(Pair, pid) for pid in built.pairs)
        me, ux, uy = (db.session.get(User, uid) for uid in (annotator_id, x, y))
        ts = db.session.get(TestSet, built.test_set_id)

        assert labeling.progress(ts, me) == labeling.Progress(0, 4, 0, 4, 2)
        labeling.save_for_pair(pa, ux, grade=1)
        labeling.save_for_pair(pa, uy, grade=2)  # a: full without me
        labeling.save_for_pair(pb, ux, grade=1)
        labeling.save_for_pair(pc, me, grade=0)
        labeling.save_for_pair(pd, ux, status="cant_tell")  # counts toward the target
        labeling.skip_pair(pd, uy)  # does not
        now = labeling.progress(ts, me)
        assert now == labeling.Progress(mine_done=1, mine_total=3, done=1, pairs=4, target=2)
        assert round(now.percent) == 25 and round(now.mine_percent) == 33

        labeling.save_for_pair(pb, me, grade=3)
        source = accounts.import_source("old.qrels")
        db.session.commit()
        labeling.save_for_pair(pd, source, grade=1)  # imports never fill the target
        assert labeling.progress(ts, me) == labeling.Progress(2, 3, 2, 4, 2)
        # x answered a, b and d (can't tell counts); nothing is closed to x.
        assert labeling.progress(ts, ux) == labeling.Progress(3, 4, 2, 4, 2)


def test_empty_pool_is_complete(app: Flask, annotator_id: int):
    built = build(app, pool={})
    with app.app_context():
        ts = db.session.get(TestSet, built.test_set_id)
        result = labeling.progress(ts, db.session.get(User, annotator_id))
        assert (result.pairs, result.percent, result.mine_percent) == (0, 100.0, 100.0)
