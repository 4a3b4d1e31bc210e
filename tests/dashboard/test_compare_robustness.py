"""The comparison's flip test: does the winner stay if every unjudged top-k chunk were top grade?

One query, k = 2, scale 0-3; judged: a = 3, b = 1. Hand-computed (L3 = log2(3)):

    A ranks a, b     today (3 + 1/L3) / (3 + 1/L3) = 1
    B ranks u1, u2   today 0 / (3 + 1/L3) = 0
    C ranks b, u1    today 1 / (3 + 1/L3)

A against B: the top-grade world grades u1 and u2 (the unjudged chunks of either top 2) 3, so
the ideal is 3, 3, 3, 1: IDCG@2 = 3 + 3/L3. A = (3 + 1/L3) / (3 + 3/L3) = 0.742, B = 1: B wins
where A won today. A against C: only u1 (C's) joins the ideal (3, 3, 1 -> 3 + 3/L3 again);
A = 0.742, C = (1 + 3/L3) / (3 + 3/L3) = 0.591: A still wins.
"""

from __future__ import annotations

import io
import json
import math

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run
from ndcg_labeler.services import comparison
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.live import ScoreOptions
from tests.factory import build_test_set

L3 = math.log2(3)
K2 = ScoreOptions(k=2)
RUNS = {
    "A": "q1 Q0 a 1 2.0 s\nq1 Q0 b 2 1.0 s\n",
    "B": "q1 Q0 u1 1 2.0 s\nq1 Q0 u2 2 1.0 s\n",
    "C": "q1 Q0 b 1 2.0 s\nq1 Q0 u1 2 1.0 s\n",
}
A_TOP = (3 + 1 / L3) / (3 + 3 / L3)
C_TOP = (1 + 3 / L3) / (3 + 3 / L3)


@pytest.fixture
def flips(app: Flask) -> dict[str, int]:
    """The test set "flips" with runs A, B and C (run ids by name)."""
    with app.app_context():
        test_set = build_test_set(
            "flips", {"q1": "parental leave"}, [("q1", "a", 3), ("q1", "b", 1)]
        )
        ids = {
            name: run_service.upload_run(
                test_set, io.BytesIO(text.encode()), f"{name}.trec", name, None
            ).id
            for name, text in RUNS.items()
        }
        db.session.remove()
    return ids


def _runs(ids: dict[str, int], *names: str) -> list[Run]:
    return [db.session.get_one(Run, ids[name]) for name in names]


def test_a_winner_that_rests_on_unjudged_chunks_flips(app: Flask, flips) -> None:
    with app.app_context():
        result = comparison.compare_runs(_runs(flips, "A", "B"), K2)
        found = result.first_pair.robustness
        assert found is not None
        assert (found.winner, found.winner_if_top) == ("A", "B")
        assert found.robust is False and found.flips_if_unjudged_top is True
        assert result.robust is False
        assert found.unjudged_pairs == 2  # u1 and u2 of q1
        assert found.mean_a_if_top == pytest.approx(A_TOP, abs=1e-15)
        assert found.mean_b_if_top == 1.0
        assert found.delta == -1.0
        data = result.to_json()
        assert (data["robust"], data["flips_if_unjudged_top"], data["unjudged_pairs"]) == (
            False,
            True,
            2,
        )
        # Per run, the run's own values: A has nothing unjudged; B's top 2 at grade 3 is ideal.
        assert data["runs"]["A"]["mean_if_unjudged_top"] == 1.0
        assert data["runs"]["B"]["mean_if_unjudged_top"] == 1.0
        assert data["runs"]["B"]["mean_condensed"] == 0.0  # nothing judged left in B's list
        query = data["queries"][0]
        assert (query["a_if_unjudged_top"], query["b_if_unjudged_top"]) == (1.0, 1.0)


def test_a_winner_that_does_not_rest_on_them_is_robust(app: Flask, flips) -> None:
    with app.app_context():
        result = comparison.compare_runs(_runs(flips, "A", "C"), K2)
        found = result.first_pair.robustness
        assert found is not None
        assert (found.winner, found.winner_if_top) == ("A", "A")
        assert found.robust is True and found.flips_if_unjudged_top is False
        assert found.unjudged_pairs == 1  # u1, in C's top 2 only
        assert found.mean_a_if_top == pytest.approx(A_TOP, abs=1e-15)
        assert found.mean_b_if_top == pytest.approx(C_TOP, abs=1e-15)
        assert found.delta == pytest.approx(1 / (3 + 1 / L3) - 1, abs=1e-15)


def test_three_runs_give_each_pair_its_own_world(app: Flask, flips) -> None:
    with app.app_context():
        result = comparison.compare_runs(_runs(flips, "A", "B", "C"), K2)
        assert [p.robustness.robust for p in result.pairs] == [False, True]
        assert [p.robustness.unjudged_pairs for p in result.pairs] == [2, 1]
        data = comparison.compare_json(result)
        assert [p["robust"] for p in data["pairs"]] == [False, True]
        assert [p["flips_if_unjudged_top"] for p in data["pairs"]] == [True, False]


def test_a_grade_for_the_unjudged_chunks_settles_it(app: Flask, flips) -> None:
    from tests.factory import grade

    with app.app_context():
        test_set = _runs(flips, "A")[0].test_set
        grade(test_set, "q1", "u1", 0, "ann")
        grade(test_set, "q1", "u2", 0, "ann")
        result = comparison.compare_runs(_runs(flips, "A", "B"), K2)
        found = result.first_pair.robustness
        assert found.unjudged_pairs == 0 and found.robust is True


def test_the_verdict_is_stored_for_fresh_workers_until_a_grade_moves(
    app: Flask, flips, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A freshly started worker (its process memory empty) reads the stored verdict instead of
    both runs' top k; a grade makes it compute the new one, stored in the same row."""
    from ndcg_labeler.models import FiguresCache
    from ndcg_labeler.services.comparison import robustness
    from tests.factory import grade

    computed = []
    original = robustness._pair_robustness
    monkeypatch.setattr(
        robustness,
        "_pair_robustness",
        lambda *a, **k: computed.append(1) or original(*a, **k),
    )
    with app.app_context():
        first = comparison.compare_runs(_runs(flips, "A", "B"), K2, stats=False)
        app.extensions["ndcg_flip_tests"].clear()  # as in a new worker
        again = comparison.compare_runs(_runs(flips, "A", "B"), K2, stats=False)
        assert computed == [1]
        assert again.first_pair.robustness == first.first_pair.robustness
        assert again.first_pair.robustness.mean_a_if_top == pytest.approx(A_TOP, abs=1e-15)
        grade(_runs(flips, "A")[0].test_set, "q1", "u1", 0, "ann")
        app.extensions["ndcg_flip_tests"].clear()
        moved = comparison.compare_runs(_runs(flips, "A", "B"), K2, stats=False)
        assert computed == [1, 1] and moved.first_pair.robustness.unjudged_pairs == 1
        kinds = db.session.scalars(
            db.select(FiguresCache.kind).where(FiguresCache.kind == "compare_flips")
        ).all()
        assert kinds == ["compare_flips"]  # one row per comparison, overwritten


def test_cli_json_has_the_flags(app: Flask, runner: FlaskCliRunner, flips) -> None:
    out = runner.invoke(args=["run", "compare", "flips", "A", "B", "--k", "2", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert (data["robust"], data["flips_if_unjudged_top"], data["unjudged_pairs"]) == (
        False,
        True,
        2,
    )
    table = runner.invoke(args=["run", "compare", "flips", "A", "C", "--k", "2"])
    assert table.exit_code == 0, table.output
    assert "robust" in table.output and "1 unjudged" in table.output


def test_exports_carry_the_columns(as_admin: FlaskClient, flips) -> None:
    both = f"run={flips['A']}&run={flips['B']}&k=2"
    test_set_id = _test_set_id(as_admin, flips)
    base = f"/test-sets/{test_set_id}/dashboard/export/compare"
    csv_text = as_admin.get(f"{base}.csv?{both}").get_data(as_text=True)
    header = csv_text.splitlines()[0].split(",")
    assert header[-4:] == ["a_if_unjudged_top", "b_if_unjudged_top", "a_condensed", "b_condensed"]
    response = as_admin.get(f"{base}.json?{both}")
    assert response.status_code == 200, response.status_code
    assert response.json["flips_if_unjudged_top"] is True
    assert response.json["unjudged_pairs"] == 2


def _test_set_id(client: FlaskClient, ids: dict[str, int]) -> int:
    with client.application.app_context():
        return db.session.get_one(Run, ids["A"]).test_set_id


def test_a_busy_database_still_gets_the_verdict_computed_once(
    app: Flask, flips, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the verdict cannot be stored (SQLite's one writer busy), the page still shows it,
    computed once, from memory."""
    from sqlalchemy.exc import OperationalError

    from ndcg_labeler.services.comparison import robustness

    computed = []
    original = robustness._pair_robustness
    monkeypatch.setattr(
        robustness, "_pair_robustness", lambda *a, **k: computed.append(1) or original(*a, **k)
    )

    def busy(test_set, kind, options, version, compute, **kwargs):  # type: ignore[no-untyped-def]
        compute(test_set)
        raise OperationalError("INSERT", {}, Exception("database is locked"))

    monkeypatch.setattr(robustness, "cached", busy)
    with app.app_context():
        result = comparison.compare_runs(_runs(flips, "A", "B"), K2, stats=False)
        assert computed == [1] and result.first_pair.robustness.unjudged_pairs == 2
