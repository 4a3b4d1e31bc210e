"""The labeling loop's background calls: prefetched cards are not leased, the pair shown is
leased (or refused when others cover it), leaving gives the lease back, and background saves
answer 200 / 409 / 400 with what the page needs."""

from __future__ import annotations

import re

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Assignment, Judgment, Pair, User
from ndcg_labeler.services import labeling
from tests.factory import build, grant, make_user


def _leases(app: Flask) -> list[tuple[int, int]]:
    """(pair_id, user_id) of every lease."""
    with app.app_context():
        db.session.remove()
        rows = db.session.execute(sa.select(Assignment.pair_id, Assignment.user_id))
        return sorted((pair, user) for pair, user in rows)


def _docids(cards: list[dict]) -> list[str]:
    return [re.search(r"Chunk <code>([^<]+)</code>", card["html"]).group(1) for card in cards]


def test_upcoming_cards_follow_the_queue_and_lease_nothing(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    built = build(app, "Ahead", pool={"q1": ["d1", "d2", "d3"], "q2": ["d4", "d5"]})
    base = f"/test-sets/{built.test_set_id}/label"
    first = as_admin.get(base)  # the page: leases the first pair
    assert first.headers["Location"].endswith(f"/label/{built.pairs[0]}")
    assert _leases(app) == [(built.pairs[0], admin_id)]

    q1 = built.queries["q1"]
    body = as_admin.get(f"{base}/upcoming.json?n=3&query={q1}&exclude={built.pairs[0]}").json
    # The rest of q1 first, then the next query; each a whole card for its pair.
    assert _docids(body["cards"]) == ["d2", "d3", "d4"]
    assert [card["pair_id"] for card in body["cards"]] == built.pairs[1:4]
    assert all(f'data-pair-id="{card["pair_id"]}"' in card["html"] for card in body["cards"])
    # Prefetching reserved nothing: only the pair on screen is leased.
    assert _leases(app) == [(built.pairs[0], admin_id)]

    skip = ",".join(str(p) for p in built.pairs[:3])
    rest = as_admin.get(f"{base}/upcoming.json?n=9&exclude={skip},junk").json
    assert _docids(rest["cards"]) == ["d4", "d5"]  # garbage ids ignored; n capped by what's left
    assert as_admin.get(f"{base}/upcoming.json?exclude={','.join(map(str, built.pairs))}").json == {
        "cards": []
    }


def test_the_pair_shown_is_leased_and_given_back_on_leave(
    app: Flask, as_admin: FlaskClient, admin_id: int
) -> None:
    built = build(app, "Lease", pool={"q1": ["d1", "d2"]})
    base = f"/test-sets/{built.test_set_id}/label"
    as_admin.get(base)
    shown = as_admin.post(f"{base}/{built.pairs[1]}/lease.json")
    assert shown.json == {"leased": True}
    # One lease per person and test set: showing the next pair frees the previous one.
    assert _leases(app) == [(built.pairs[1], admin_id)]
    assert as_admin.post(f"{base}/{built.pairs[1]}/release").status_code == 204
    assert _leases(app) == []


def test_a_pair_others_cover_is_not_leased(app: Flask, as_admin: FlaskClient) -> None:
    built = build(app, "Covered", pool={"q1": ["d1", "d2"]}, target=1)
    other = make_user(app, "other-annotator")
    grant(app, built.test_set_id, other)
    base = f"/test-sets/{built.test_set_id}/label"
    ahead = as_admin.get(f"{base}/upcoming.json?n=2").json["cards"]
    assert [card["pair_id"] for card in ahead] == built.pairs
    # Someone else answers the first pair after it was prefetched: showing it is refused.
    with app.app_context():
        pair = db.session.get_one(Pair, built.pairs[0])
        labeling.save_for_pair(pair, db.session.get_one(User, other), grade=2)
    assert as_admin.post(f"{base}/{built.pairs[0]}/lease.json").json == {"leased": False}
    assert _leases(app) == []
    assert as_admin.post(f"{base}/{built.pairs[1]}/lease.json").json == {"leased": True}


def test_background_save_answers_saved_conflict_and_refused(
    app: Flask, as_admin: FlaskClient
) -> None:
    built = build(app, "Saves", pool={"q1": ["d1", "d2"]})
    url = f"/test-sets/{built.test_set_id}/label/{built.pairs[0]}/save.json"
    saved = as_admin.post(url, data={"grade": 3, "version": 0, "active_ms": 1200})
    assert saved.status_code == 200
    assert saved.json["saved"] is True and saved.json["version"] == 1
    # The page swaps in my progress as the server counts it now.
    assert '<progress id="progress-mine" max="2" value="1">' in saved.json["progress"]

    # Sent again with the version it was rendered with (a retry after a lost answer, or a
    # second tab): refused with what is stored, nothing overwritten.
    stale = as_admin.post(url, data={"grade": 1, "version": 0})
    assert stale.status_code == 409
    assert stale.json["stored"] == {"status": "graded", "grade": 3}
    assert stale.json["version"] == 1

    past_scale = as_admin.post(url, data={"grade": 4, "version": 1})
    assert past_scale.status_code == 400
    assert "outside this test set's scale 0–3" in past_scale.json["error"]
    # Past every scale or below it: still named by this set's scale, not the largest one
    # (it read "Number must be between 0 and 4." on a 0–3 set).
    for grade in (9, -1):
        refused = as_admin.post(url, data={"grade": grade, "version": 1})
        assert refused.status_code == 400
        assert refused.json["error"] == f"grade {grade} is outside this test set's scale 0–3"
    garbled = as_admin.post(url, data={"grade": "abc", "version": 1})
    assert garbled.json["error"] == "Not a valid integer value."
    nothing = as_admin.post(url, data={"version": 1})
    assert nothing.status_code == 400 and "Choose a grade" in nothing.json["error"]
    with app.app_context():
        stored = db.session.execute(sa.select(Judgment.grade, Judgment.active_ms)).all()
    assert [tuple(row) for row in stored] == [(3, 1200)]
