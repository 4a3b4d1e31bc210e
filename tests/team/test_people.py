"""People: judgments, median active time, grade distribution, consensus agreement and trend.

Consensus of the others under median (lower middle) on tests/factory.build_team:
    alice: d1 (others 3,3 -> 3) =, d2 (1,2 -> 1) 2 vs 1, d3 (0 -> 0) =, d4 (3 -> 3) 1 vs 3
           -> 2 of 4 = 0.5, mean distance (0 + 1 + 0 + 2) / 4 = 0.75
    bob:   d1 =, d2 (2,2 -> 2) 1 vs 2, d3 =, d5 (2) =           -> 3/4, distance 1/4
    carol: d1 =, d2 (2,1 -> 1) 2 vs 1, d4 (1) 3 vs 1, d5 =      -> 2/4, distance 3/4
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, Query, TestSet, User, utcnow
from ndcg_labeler.services import labeling
from ndcg_labeler.services import team as team_service
from ndcg_labeler.services.team.people import bucket_size, people
from tests.factory import build, build_team, judge, make_user, without_tokens


def _people(app: Flask, test_set_id: int, **kwargs) -> dict[str, team_service.Person]:
    with app.app_context():
        found = people(db.session.get_one(TestSet, test_set_id), **kwargs)
        return {p.username: p for p in found}


def test_counts_time_and_grade_distribution(app: Flask, annotator_id: int):
    team = build_team(app, members=(annotator_id,))
    rows = _people(app, team.id)
    assert list(rows) == ["alice", "ann", "bob", "carol"]  # members without judgments too
    alice, bob, carol, ann = rows["alice"], rows["bob"], rows["carol"], rows["ann"]
    assert (alice.judgments, alice.graded, alice.cant_tell, alice.skipped) == (5, 5, 0, 0)
    assert (bob.judgments, bob.graded, bob.cant_tell, bob.skipped) == (5, 4, 1, 0)
    assert (carol.judgments, carol.graded, carol.cant_tell, carol.skipped) == (5, 4, 0, 1)
    assert (ann.judgments, ann.median_active_seconds, ann.consensus.agreement) == (0, None, None)
    # alice's timed answers took 1, 2, 3 and 4 s (one has no time): median 2.5 s.
    assert alice.median_active_seconds == pytest.approx(2.5)
    assert bob.median_active_seconds is None
    assert alice.grade_counts == [2, 1, 1, 1]
    assert bob.grade_counts == [1, 1, 1, 1]
    assert carol.grade_counts == [0, 0, 2, 2]


def test_agreement_with_the_consensus_of_the_others(app: Flask):
    team = build_team(app)
    rows = _people(app, team.id)
    expected = {"alice": (4, 0.5, 0.75), "bob": (4, 0.75, 0.25), "carol": (4, 0.5, 0.75)}
    for name, (items, share, distance) in expected.items():
        c = rows[name].consensus
        assert c.items == items
        assert c.agreement == pytest.approx(share)
        assert c.mean_abs_diff == pytest.approx(distance)


def test_annotator_view_keeps_only_their_row(app: Flask):
    team = build_team(app)
    rows = _people(app, team.id, only_user_id=team.users["bob"])
    assert list(rows) == ["bob"]
    assert rows["bob"].consensus.agreement == pytest.approx(0.75)  # still against everyone


@pytest.mark.parametrize(("shared", "size"), [(0, 10), (25, 10), (120, 10), (121, 11), (240, 20)])
def test_bucket_size(shared: int, size: int):
    assert bucket_size(shared) == size


def test_trend_per_bucket_of_shared_pairs(app: Flask):
    """x and y grade 25 pairs; by x's order of grading, y agrees on 5 of the first 10, all of
    the next 10 and none of the last 5. Buckets of max(10, ceil(25/12)) = 10: 0.5, 1.0, 0.0."""
    x, y = make_user(app, "x"), make_user(app, "y")
    docids = [f"d{i:02d}" for i in range(25)]
    built = build(app, "trend", pool={"q": docids}, target=2, members=(x, y))
    for i, docid in enumerate(docids):
        agree = i < 5 or 10 <= i < 20
        judge(app, built.test_set_id, "q", docid, "x", grade=2)
        judge(app, built.test_set_id, "q", docid, "y", grade=2 if agree else 0)
    with app.app_context():
        start = utcnow() - timedelta(days=30)
        # x graded d00 first and d24 last, one day apart each (the order the trend follows).
        for i, docid in enumerate(docids):
            db.session.execute(
                sa.update(Judgment)
                .where(Judgment.annotator_id == x, Judgment.chunk_id == built.chunks[docid])
                .values(updated_at=start + timedelta(days=i))
            )
        db.session.commit()
    rows = _people(app, built.test_set_id)
    trend = rows["x"].trend
    assert rows["x"].bucket_size == 10
    assert [p.items for p in trend] == [10, 10, 5]
    assert [p.agreement for p in trend] == [0.5, 1.0, 0.0]
    assert rows["x"].consensus.agreement == pytest.approx(15 / 25)


def test_people_table_has_csv_and_json_twins(app: Flask, client, auth) -> None:
    """The figures of the docstring's hand computation, in both downloads; an annotator's
    downloads hold only their own row, as the page does."""
    team = build_team(app)
    make_user(app, "boss", "admin")
    auth.login("boss")
    base = f"/test-sets/{team.id}/people"
    page = client.get(base).get_data(as_text=True)
    assert f'href="{base}.csv"' in page and f'href="{base}.json"' in page
    body = client.get(base + ".json").get_json()["people"]
    by_name = {row["annotator"]: row for row in body}
    assert set(by_name) == {"alice", "bob", "carol"}
    assert (by_name["bob"]["judgments"], by_name["bob"]["cant_tell"]) == (5, 1)
    assert by_name["bob"]["agreement_with_others"] == pytest.approx(0.75)
    assert by_name["carol"]["mean_distance"] == pytest.approx(0.75)
    assert by_name["carol"]["grade_counts"] == {"0": 0, "1": 0, "2": 2, "3": 2}
    lines = client.get(base + ".csv").get_data(as_text=True).splitlines()
    assert lines[0] == (
        "annotator,import_source,judgments,graded,cant_tell,skipped,median_active_seconds,"
        "shared_pairs,agreement_with_others,mean_distance,grade_0,grade_1,grade_2,grade_3"
    )
    assert "alice,False,5,5,0,0,2.5,4,0.5,0.75,2,1,1,1" in lines
    auth.logout()
    auth.login("bob")
    mine = client.get(base + ".json").get_json()["people"]
    assert [row["annotator"] for row in mine] == ["bob"]
    assert len(client.get(base + ".csv").get_data(as_text=True).splitlines()) == 2


def test_a_drilldown_correction_is_no_rating_here_either(app: Flask):
    # As on the Agreement page: a grade set in a run's drill-down was given beside the current
    # grades, so it is no independent pass. Here it counted as "the others' consensus": alice
    # read 1 of 1 shared pairs agreeing (100 %) while Agreement said nobody shared a pair.
    built = build(app, "drill", pool={"q1": ["d1"]}, target=2)
    make_user(app, "alice")
    make_user(app, "boss", "admin")
    judge(app, built.test_set_id, "q1", "d1", "alice", grade=2)
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        query, chunk = (
            db.session.get_one(Query, built.queries["q1"]),
            db.session.get_one(Chunk, built.chunks["d1"]),
        )
        boss = db.session.scalar(sa.select(User).where(User.username == "boss"))
        labeling.save_judgment(test_set, query, chunk, boss, grade=2, via="drilldown")
        assert team_service.agreement_of(test_set).pairs_with_2plus == 0
    rows = _people(app, built.test_set_id)
    alice, boss_row = rows["alice"], rows["boss"]
    assert (alice.consensus.items, alice.consensus.agreement) == (0, None)
    assert (boss_row.consensus.items, boss_row.consensus.agreement) == (0, None)
    assert alice.trend == [] and boss_row.trend == []
    # The correction is still boss's judgment: volume and grades count it.
    assert (boss_row.judgments, boss_row.graded, boss_row.grade_counts) == (1, 1, [0, 0, 1, 0])


def test_a_blind_annotator_cannot_read_anothers_grade_off_their_own_row(
    app: Flask, client, auth
) -> None:
    """On a blind set (two judgments per pair) "agrees with the others" and "mean distance" are
    the others' grades summed up: with one shared pair, a mean distance of 3 after grading 0
    says the other gave 3. An annotator keeps their volume, speed and grades; admins see all."""
    ann, other = make_user(app, "ann"), make_user(app, "other")
    make_user(app, "boss", "admin")
    built = build(app, pool={"q1": ["d1"]}, target=2, members=(ann, other))
    judge(app, built.test_set_id, "q1", "d1", "ann", grade=0)
    judge(app, built.test_set_id, "q1", "d1", "other", grade=3)
    base = f"/test-sets/{built.test_set_id}/people"
    auth.login("ann")
    (row,) = client.get(base + ".json").get_json()["people"]
    assert (row["annotator"], row["graded"], row["grade_counts"]["0"]) == ("ann", 1, 1)
    assert row["mean_distance"] is None and row["agreement_with_others"] is None
    header, line = client.get(base + ".csv").get_data(as_text=True).splitlines()
    cells = dict(zip(header.split(","), line.split(","), strict=True))
    assert cells["mean_distance"] == cells["agreement_with_others"] == ""
    page = without_tokens(client.get(base).get_data(as_text=True))
    assert "3.00" not in page and "0.0%" not in page
    assert "judged blind" in page
    auth.logout()
    auth.login("boss")
    rows = {r["annotator"]: r for r in client.get(base + ".json").get_json()["people"]}
    assert rows["ann"]["mean_distance"] == pytest.approx(3.0)
    assert rows["ann"]["agreement_with_others"] == pytest.approx(0.0)
