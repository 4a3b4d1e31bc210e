"""Progress: mine (answered / open to me) and the test set's (pairs at target / pairs)."""

from __future__ import annotations

import re

from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Pair, TestSet, User
from ndcg_labeler.services import accounts, labeling, testsets
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
        # Graded: a, b and c have a grade (d only a can't-tell and a skip).
        assert now == labeling.Progress(
            mine_done=1, mine_total=3, done=1, pairs=4, target=2, graded=3
        )
        assert round(now.percent) == 25 and round(now.mine_percent) == 33

        labeling.save_for_pair(pb, me, grade=3)
        source = accounts.import_source("old.qrels")
        db.session.commit()
        labeling.save_for_pair(pd, source, grade=1)  # imports never fill the target
        # The imported grade makes d graded, but not complete.
        assert labeling.progress(ts, me) == labeling.Progress(2, 3, 2, 4, 2, graded=4)
        # x answered a, b and d (can't tell counts); nothing is closed to x.
        assert labeling.progress(ts, ux) == labeling.Progress(3, 4, 2, 4, 2, graded=4)


def test_empty_pool_is_complete(app: Flask, annotator_id: int):
    built = build(app, pool={})
    with app.app_context():
        ts = db.session.get(TestSet, built.test_set_id)
        result = labeling.progress(ts, db.session.get(User, annotator_id))
        assert (result.pairs, result.percent, result.mine_percent) == (0, 100.0, 100.0)


def _figures(page: str) -> dict[str, str]:
    """Each progress figure's sentence as shown (tags dropped, spaces folded)."""
    found = re.findall(r'data-figure="(\w+)">\s*<(label|p)\b[^>]*>(.*?)</\2>', page, re.S)
    return {name: " ".join(re.sub(r"<[^>]+>", "", text).split()) for name, _, text in found}


def test_every_page_shows_the_same_three_figures(app: Flask, client, auth) -> None:
    built = build(app, pool={"q1": ["a", "b", "c"], "q2": ["d"]}, target=2)
    me = make_user(app, "me")
    x = make_user(app, "x")
    with app.app_context():
        ts = db.session.get(TestSet, built.test_set_id)
        testsets.grant(ts, db.session.get(User, me))
        pa, pb, pd = (db.session.get(Pair, built.pairs[i]) for i in (0, 1, 3))
        labeling.save_for_pair(pa, db.session.get(User, x), grade=1)
        labeling.save_for_pair(pa, db.session.get(User, me), grade=2)  # a: complete
        labeling.save_for_pair(pb, db.session.get(User, me), grade=0)
        labeling.save_for_pair(pd, accounts.import_source("old.qrels"), grade=1)
        db.session.commit()
    auth.login("me")
    base = f"/test-sets/{built.test_set_id}"
    pages = {
        "overview": client.get(base).get_data(as_text=True),
        "dashboard": client.get(f"{base}/dashboard/").get_data(as_text=True),
        "labeling": client.get(f"{base}/label", follow_redirects=True).get_data(as_text=True),
    }
    expected = {
        "graded": "Graded: 3 of 4 pairs have a grade (75%, people or imported qrels)",
        "complete": "Complete: 1 of 4 pairs has the 2 people's judgments it needs (25%)",
        "mine": "Mine: 2 of 4 pairs open to me answered",
    }
    for name, page in pages.items():
        assert _figures(page) == expected, name


def test_nothing_to_complete_says_so_instead_of_0_of_0(app: Flask, client, auth) -> None:
    built = build(app, pool={}, target=1)
    make_user(app, "boss", "admin")
    auth.login("boss")
    page = client.get(f"/test-sets/{built.test_set_id}").get_data(as_text=True)
    figures = _figures(page)
    assert figures["complete"] == (
        "Complete: nothing to complete yet: the labeling queue has no pairs (import queries"
        " and chunks, or pool a run's top chunks)."
    )
    assert figures["mine"] == "Mine: nothing to label yet."
    assert "0 of 0" not in page


def test_mine_says_when_nothing_is_left_open_to_me(app: Flask, client, auth) -> None:
    built = build(app, pool={"q1": ["a"]}, target=1)
    me = make_user(app, "me")
    x = make_user(app, "x")
    with app.app_context():
        ts = db.session.get(TestSet, built.test_set_id)
        testsets.grant(ts, db.session.get(User, me))
        labeling.save_for_pair(
            db.session.get(Pair, built.pairs[0]), db.session.get(User, x), grade=2
        )
        db.session.commit()
    auth.login("me")
    figures = _figures(client.get(f"/test-sets/{built.test_set_id}").get_data(as_text=True))
    assert (
        figures["complete"] == "Complete: 1 of 1 pair has the 1 person's judgment it needs (100%)"
    )
    assert (
        figures["mine"]
        == "Mine: no pair is open to me: others gave every pair the answers it needs."
    )
