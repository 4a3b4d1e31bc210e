"""Does disagreement change the answer? Mean NDCG@10 of runs A and B under every policy.

d1 is graded 0 and 2, d2 1 and 1 (tests/factory.build_runs). d1 is 0 under median (lower
middle), min and majority (a tie goes to the lower grade), 1 under mean, 2 under max.
A ranks d1, d2; B ranks d2, d1; linear gain, ideal from the judged grades. With L = log2 3:
    d1 = 0: A = (0 + 1/L) / 1 = 0.6309, B = 1 / 1 = 1          -> B above A
    d1 = 1: A = B = (1 + 1/L) / (1 + 1/L) = 1                   -> tie
    d1 = 2: A = (2 + 1/L) / (2 + 1/L) = 1, B = (1 + 2/L) / (2 + 1/L) = 0.8597 -> A above B
"""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Query, TestSet, User
from ndcg_labeler.services import team as team_service
from ndcg_labeler.services.team.policies import PolicyComparison, compare_policies
from tests.factory import build_runs

L = math.log2(3)
B_UNDER_MAX = (1 + 2 / L) / (2 + 1 / L)


def _compare(app: Flask, test_set_id: int) -> PolicyComparison:
    with app.app_context():
        return compare_policies(db.session.get_one(TestSet, test_set_id), 10)


def test_means_and_ranks_under_every_policy(app: Flask):
    team = build_runs(app)
    found = _compare(app, team.id)
    assert found.base == "median" and found.policies == ("median", "mean", "max", "min", "majority")
    rows = {row.name: row.cells for row in found.rows}
    expected = {
        "median": (1 / L, 1.0),
        "mean": (1.0, 1.0),
        "max": (1.0, B_UNDER_MAX),
        "min": (1 / L, 1.0),
        "majority": (1 / L, 1.0),
    }
    for policy, (a, b) in expected.items():
        assert rows["A"][policy].mean == pytest.approx(a)
        assert rows["B"][policy].mean == pytest.approx(b)
        assert rows["A"][policy].queries_in_mean == 1
    assert (rows["A"]["median"].rank, rows["B"]["median"].rank) == (2, 1)
    assert (rows["A"]["mean"].rank, rows["B"]["mean"].rank) == (1, 1)
    assert (rows["A"]["max"].rank, rows["B"]["max"].rank) == (1, 2)


def test_which_policies_reorder_which_runs(app: Flask):
    team = build_runs(app)
    found = _compare(app, team.id)
    assert not found.same_order
    assert found.reorders["min"] == [] and found.reorders["majority"] == []
    (by_max,) = found.reorders["max"]
    assert by_max.describe() == "A ranks above B"
    assert by_max.before() == "B ranks above A"
    (by_mean,) = found.reorders["mean"]
    assert by_mean.describe() == "A and B tie"
    assert "median" not in found.reorders


def test_same_order_once_the_disputed_pair_is_adjudicated(app: Flask, admin_id: int):
    team = build_runs(app)
    with app.app_context():
        test_set = db.session.get_one(TestSet, team.id)
        query = db.session.scalar(sa.select(Query).where(Query.test_set_id == team.id))
        chunk = db.session.scalar(
            sa.select(Chunk).where(Chunk.test_set_id == team.id, Chunk.docid == "d1")
        )
        admin = db.session.get_one(User, admin_id)
        team_service.adjudicate(test_set, query, chunk, 0, "", admin)
    found = _compare(app, team.id)
    assert found.same_order
    for row in found.rows:
        expected = 1 / L if row.name == "A" else 1.0
        assert [cell.mean for cell in row.cells.values()] == pytest.approx([expected] * 5)


def test_no_runs(app: Flask):
    team = build_runs(app)
    with app.app_context():
        empty = TestSet(name="no runs", scale_max=3, grade_labels=[{"name": "x"}] * 4)
        db.session.add(empty)
        db.session.commit()
        found = compare_policies(empty)
    assert found.rows == [] and found.same_order and team.id != empty.id
