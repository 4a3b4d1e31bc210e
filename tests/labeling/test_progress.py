"""Progress: mine (answered / open to me) and the test set's (pairs at target / pairs)."""

from __future__ import annotations

from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Pair, TestSet, User
from ndcg_labeler.services import judging, progress, users
from tests.factory import build, make_user


def test_progress_counts(app: Flask, annotator_id: int):
    built = build(app, pool={"q1": ["a", "b", "c"], "q2": ["d"]}, target=2)
    x = make_user(app, "x")
    y = make_user(app, "y")
    with app.app_context():
        pa, pb, pc, pd = (db.session.get(Pair, pid) for pid in built.pairs)
        me, ux, uy = (db.session.get(User, uid) for uid in (annotator_id, x, y))
        ts = db.session.get(TestSet, built.test_set_id)

        assert progress.progress(ts, me) == progress.Progress(0, 4, 0, 4, 2)
        judging.save_for_pair(pa, ux, grade=1)
        judging.save_for_pair(pa, uy, grade=2)  # a: full without me
        judging.save_for_pair(pb, ux, grade=1)
        judging.save_for_pair(pc, me, grade=0)
        judging.save_for_pair(pd, ux, status="cant_tell")  # counts toward the target
        judging.skip_pair(pd, uy)  # does not
        now = progress.progress(ts, me)
        assert now == progress.Progress(mine_done=1, mine_total=3, done=1, pairs=4, target=2)
        assert round(now.percent) == 25 and round(now.mine_percent) == 33

        judging.save_for_pair(pb, me, grade=3)
        source = users.import_source("old.qrels")
        db.session.commit()
        judging.save_for_pair(pd, source, grade=1)  # imports never fill the target
        assert progress.progress(ts, me) == progress.Progress(2, 3, 2, 4, 2)
        # x answered a, b and d (can't tell counts); nothing is closed to x.
        assert progress.progress(ts, ux) == progress.Progress(3, 4, 2, 4, 2)


def test_empty_pool_is_complete(app: Flask, annotator_id: int):
    built = build(app, pool={})
    with app.app_context():
        ts = db.session.get(TestSet, built.test_set_id)
        result = progress.progress(ts, db.session.get(User, annotator_id))
        assert (result.pairs, result.percent, result.mine_percent) == (0, 100.0, 100.0)
