"""Comparing runs: hand-computed deltas, scipy for the t-test, and `flask run compare` exactly."""

from __future__ import annotations

import io
import json
import time

import numpy as np
import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run
from ndcg_labeler.scoring.significance import bootstrap_ci, randomization_test
from ndcg_labeler.services import ServiceError, comparison
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.comparison import stats as comparison_stats
from ndcg_labeler.services.live import ScoreOptions
from ndcg_labeler.views import figures
from tests.factory import A3, B3, RUN_A, Demo, build_test_set, grade, the_test_set, trec

K3 = ScoreOptions(k=3)
COMPARED = ["q1", "q2", "q3", "q5"]  # q4 is undefined (no grade) and left out of both


def _runs(demo: Demo) -> list[Run]:
    return [db.session.get_one(Run, demo.run_a), db.session.get_one(Run, demo.run_b)]


def test_compare_by_hand_and_against_scipy(ctx: Flask, dash: Demo) -> None:
    result = comparison.compare_runs(_runs(dash), K3)
    assert (result.compared, result.left_out, result.total) == (4, 1, 5)
    a = [A3[q] for q in COMPARED]
    b = [B3[q] for q in COMPARED]
    # B − A: q1 +0.5758, q2 −0.1403, q3 +0.3691, q5 −1 (B lacks q5: 0). Largest |Δ| first.
    assert [d.qid for d in result.deltas] == ["q5", "q1", "q3", "q2"]
    assert [d.delta for d in result.deltas] == pytest.approx(
        [B3[q] - A3[q] for q in ("q5", "q1", "q3", "q2")]
    )
    pair = result.first_pair
    assert (pair.wins, pair.ties, pair.losses) == (2, 0, 2)
    assert pair.t_test_p == pytest.approx(stats.ttest_rel(b, a).pvalue)
    # Four pairs: the randomisation test enumerates all 16 sign patterns (exact).
    assert pair.randomization_p == randomization_test(a, b)
    signs = np.array([[1 if (p >> i) & 1 else -1 for i in range(4)] for p in range(16)])
    deltas = np.array(b) - np.array(a)
    hits = np.abs((signs * deltas).sum(axis=1)) >= abs(deltas.sum()) - 1e-12
    assert pair.randomization_p == pytest.approx(hits.mean())
    mean_a, mean_b = result.means
    assert mean_a.mean == pytest.approx(np.mean(a))
    # Four queries: too few for a bootstrap interval, and too few for a band.
    assert (mean_a.low, mean_a.high, mean_b.low, mean_b.high) == (None, None, None, None)
    assert (mean_a.band, mean_b.band) == ("not enough labels", "not enough labels")
    assert mean_b.mean == pytest.approx(np.mean(b))
    scatter = figures.scatter(result)
    assert scatter is not None and "4 queries" in scatter.desc


def test_intervals_and_bands_from_enough_queries(ctx: Flask) -> None:
    """12 queries, one relevant chunk each (grade 2): A ranks it first everywhere (NDCG@3 1),
    B second in the even queries (1/log2(3)); every top 3 is judged only at that chunk."""
    qids = [f"q{i}" for i in range(1, 13)]
    test_set = build_test_set("Twelve", {q: q for q in qids}, [(q, "rel", 2) for q in qids])
    a_rank = {q: ["rel", "x1", "x2"] for q in qids}
    b_rank = {q: (["x1", "rel", "x2"] if i % 2 == 0 else ["rel", "x1", "x2"]) for i, q in
              enumerate(qids)}  # fmt: skip
    runs = [
        run_service.upload_run(test_set, io.BytesIO(trec(ranking)), "r.trec", name, None)
        for name, ranking in (("A", a_rank), ("B", b_rank))
    ]
    result = comparison.compare_runs(runs, K3)
    a = [1.0] * 12
    b = [1 / np.log2(3) if i % 2 == 0 else 1.0 for i in range(12)]
    mean_a, mean_b = result.means
    assert result.compared == 12
    assert (mean_a.low, mean_a.high) == bootstrap_ci(a)[1:]
    assert (mean_b.low, mean_b.high) == bootstrap_ci(b)[1:]
    assert mean_b.low <= mean_b.mean <= mean_b.high
    # Judged@3 is 1/3 in every query: the means are shown without a band.
    assert mean_a.judged == pytest.approx(1 / 3)
    assert (mean_a.band, mean_b.band) == ("not enough labels", "not enough labels")


def test_json_shape_is_the_cli_contract(ctx: Flask, dash: Demo) -> None:
    data = comparison.compare_runs(_runs(dash), K3).to_json()
    assert list(data) == [
        "k",
        "runs",
        "robust",
        "flips_if_unjudged_top",
        "unjudged_pairs",
        "winner",
        "winner_if_unjudged_top",
        "mean_a_if_unjudged_top",
        "mean_b_if_unjudged_top",
        "wins",
        "ties",
        "losses",
        "t_test_p",
        "randomization_p",
        "queries",
        "compared",
    ]
    assert data["k"] == 3
    assert list(data["runs"]) == ["A", "B"]
    assert set(data["runs"]["A"]) == {
        "mean",
        "ci_low",
        "ci_high",
        "mean_if_unjudged_top",
        "mean_condensed",
    }
    assert list(data["queries"][0])[:4] == ["qid", "a", "b", "delta"]
    assert {k: data["queries"][0][k] for k in ("qid", "a", "b", "delta")} == {
        "qid": "q5",
        "a": 1.0,
        "b": 0.0,
        "delta": -1.0,
    }


def test_three_runs_are_each_compared_with_the_first(ctx: Flask, dash: Demo) -> None:
    a, b = _runs(dash)
    c = run_service.upload_run(the_test_set(dash), io.BytesIO(trec(RUN_A)), "c.trec", "C", None)
    result = comparison.compare_runs([a, b, c], K3)
    assert [(p.a.name, p.b.name) for p in result.pairs] == [("A", "B"), ("A", "C")]
    same = result.pairs[1]
    assert (same.wins, same.ties, same.losses, same.randomization_p) == (0, 4, 0, 1.0)
    assert same.t_test_p == 1.0


def test_refusals(ctx: Flask, dash: Demo) -> None:
    a, _ = _runs(dash)
    with pytest.raises(ServiceError, match="at least two"):
        comparison.compare_runs([a], K3)
    with pytest.raises(ServiceError, match="different runs"):
        comparison.compare_runs([a, a], K3)


def test_cli_json_equals_the_service(app: Flask, runner: FlaskCliRunner, dash: Demo) -> None:
    result = runner.invoke(args=["run", "compare", "dash", "A", "B", "--k", "3", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    with app.app_context():
        expected = comparison.compare_runs(_runs(dash), K3).to_json()
        db.session.remove()
    assert data == expected
    assert (data["wins"], data["ties"], data["losses"]) == (2, 0, 2)
    assert [q["qid"] for q in data["queries"]] == ["q5", "q1", "q3", "q2"]


def test_cli_table_and_errors(runner: FlaskCliRunner, dash: Demo) -> None:
    table = runner.invoke(args=["run", "compare", "dash", "A", "B", "--k", "3"])
    assert table.exit_code == 0, table.output
    assert (
        table.output.splitlines()[0]
        == "NDCG@3, gain linear, ideal judged, grades combined by median"
    )
    assert "B beats A on 2 queries, ties on 0, loses on 2." in table.output
    assert "Compared on 4 of 5 queries (1 left out" in table.output
    missing = runner.invoke(args=["run", "compare", "dash", "A", "nope", "--json"])
    assert missing.exit_code == 1
    assert "Error: test set 'dash' has no run named 'nope'" in missing.output
    bad_k = runner.invoke(args=["run", "compare", "dash", "A", "B", "--k", "x"])
    assert (
        bad_k.exit_code == 1
        and "k must be a whole number from 1 to 100000, not 'x'" in bad_k.output
    )


def test_statistics_are_cached_by_the_scores(ctx: Flask, dash: Demo) -> None:
    runs = _runs(dash)
    lazy = comparison.compare_runs(runs, K3, stats=False)
    assert not lazy.stats_ready
    assert [m.low for m in lazy.means] == [None, None]
    assert lazy.means[0].mean == pytest.approx(np.mean([A3[q] for q in COMPARED]))
    pair = lazy.first_pair
    assert (pair.wins, pair.ties, pair.losses, pair.t_test_p) == (2, 0, 2, None)
    full = comparison.compare_runs(runs, K3, stats=True)
    cached = comparison.compare_runs(runs, K3, stats=False)
    assert cached.stats_ready and cached.means == full.means and cached.pairs == full.pairs
    # A grade changes the scores, so the cached statistics no longer apply.
    grade(the_test_set(dash), "q3", "f2", 1, "maria")
    assert not comparison.compare_runs(runs, K3, stats=False).stats_ready


def _stats_settled(client: FlaskClient, url: str) -> str:
    """GET the statistics fragment until its figures are in (it polls while computing)."""
    deadline = time.monotonic() + 20
    response = client.get(url)
    while response.status_code == 202 and time.monotonic() < deadline:
        # 202 while computing; the fragment asks again, not at once
        assert 'hx-trigger="load delay:1s"' in response.text and "computing…" in response.text
        time.sleep(0.05)
        response = client.get(url)
    assert response.status_code == 200
    return response.text


def test_big_comparisons_compute_their_statistics_in_the_background(
    app: Flask, as_admin: FlaskClient, dash: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "ndcg_labeler.services.comparison.compare.INLINE_MAX_VALUES", 3
    )  # our 4 compared queries × 2 runs count as "big"
    calls = []
    original = comparison_stats._compute

    def counted(*args, **kwargs):
        calls.append(args)
        time.sleep(0.3)  # long enough for the fragment to be asked again meanwhile
        return original(*args, **kwargs)

    monkeypatch.setattr(comparison_stats, "_compute", counted)
    both = f"run={dash.run_a}&run={dash.run_b}&k=3"
    page = as_admin.get(dash.url(f"/compare/?{both}")).get_data(as_text=True)
    assert "Computing the bootstrap intervals" in page
    assert 'hx-trigger="load"' in page and "/compare/_stats?" in page
    # The fragment answers at once while one background thread computes, then shows them.
    first = as_admin.get(dash.url(f"/compare/_stats?{both}"))
    assert first.status_code == 202 and "computing…" in first.text
    stats_text = _stats_settled(as_admin, dash.url(f"/compare/_stats?{both}"))
    assert "Computing" not in stats_text and "computing…" not in stats_text
    assert 'id="compare-stats"' in stats_text and 'id="tests-table"' in stats_text
    assert len(calls) == 1  # however often the fragment asked meanwhile
    # Stored in the database: the CLI's exact path (stats=True) takes them without computing.
    with app.app_context():
        data = comparison.compare_runs(_runs(dash), K3, stats=True)
        db.session.remove()
    assert data.stats_ready and len(calls) == 1
    # The same numbers as the tests on the hand-computed scores.
    a = [A3[q] for q in COMPARED]
    b = [B3[q] for q in COMPARED]
    assert data.first_pair.randomization_p == randomization_test(a, b)
    assert data.first_pair.t_test_p == pytest.approx(stats.ttest_rel(b, a).pvalue)
    again = as_admin.get(dash.url(f"/compare/?{both}")).get_data(as_text=True)
    assert "computing…" not in again
    # A grade changes the scores: the stored figures no longer apply and are recomputed.
    with app.app_context():
        grade(the_test_set(dash), "q3", "f2", 1, "maria")
        db.session.remove()
    assert "computing…" in as_admin.get(dash.url(f"/compare/?{both}")).get_data(as_text=True)
    assert "computing…" not in _stats_settled(as_admin, dash.url(f"/compare/_stats?{both}"))
    assert len(calls) == 2
    assert as_admin.get(dash.url(f"/compare/_stats?run={dash.run_a}")).status_code == 400


def test_more_runs_leave_their_statistics_to_the_background_sooner(
    app: Flask, as_admin: FlaskClient, dash: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The work grows with the runs (an interval and a pair of tests each): the limit counts
    compared queries × runs. Our 4 compared queries over 2 runs (8 values) are computed in the
    fragment's own request; over 3 runs (12 values), in the background."""
    monkeypatch.setattr("ndcg_labeler.services.comparison.compare.INLINE_MAX_VALUES", 8)
    with app.app_context():
        run_service.upload_run(the_test_set(dash), io.BytesIO(trec(RUN_A)), "c.trec", "C", None)
        c = db.session.execute(sa.select(Run.id).where(Run.name == "C")).scalar_one()
        db.session.remove()
    two = f"run={dash.run_a}&run={dash.run_b}&k=3"
    assert as_admin.get(dash.url(f"/compare/_stats?{two}")).status_code == 200
    three = f"{two}&run={c}"
    first = as_admin.get(dash.url(f"/compare/_stats?{three}"))
    assert first.status_code == 202 and "computing…" in first.text
    assert 'id="tests-table"' in _stats_settled(as_admin, dash.url(f"/compare/_stats?{three}"))


def test_the_page_never_waits_for_the_statistics(
    as_admin: FlaskClient, dash: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even a small comparison's page leaves the statistics to its fragment (the first one in
    a worker imports scipy.stats, a second); the fragment computes them in its own request."""
    computed = []
    original = comparison_stats._compute
    monkeypatch.setattr(
        comparison_stats, "_compute", lambda *a, **k: computed.append(1) or original(*a, **k)
    )
    both = f"run={dash.run_a}&run={dash.run_b}&k=3"
    page = as_admin.get(dash.url(f"/compare/?{both}")).get_data(as_text=True)
    assert "computing…" in page and computed == []
    stats_part = as_admin.get(dash.url(f"/compare/_stats?{both}"))
    assert stats_part.status_code == 200 and "computing…" not in stats_part.text
    assert computed == [1]
    # Without JavaScript, ?stats=1 computes them on the page (stored now: no new computation).
    forced = as_admin.get(dash.url(f"/compare/?{both}&stats=1")).get_data(as_text=True)
    assert "computing…" not in forced and computed == [1]


def test_exports_of_a_big_comparison_never_wait_for_its_statistics(
    as_admin: FlaskClient, runner: FlaskCliRunner, dash: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CSV holds no statistics and never computes them; the JSON answers 202 with
    Retry-After while one background computation runs, then the CLI's exact JSON."""
    monkeypatch.setattr("ndcg_labeler.services.comparison.compare.INLINE_MAX_VALUES", 3)
    calls = []
    original = comparison_stats._compute
    monkeypatch.setattr(
        comparison_stats, "_compute", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    both = f"run={dash.run_a}&run={dash.run_b}&k=3"
    csv_export = as_admin.get(dash.url(f"/export/compare.csv?{both}"))
    assert csv_export.status_code == 200 and calls == []
    first = as_admin.get(dash.url(f"/export/compare.json?{both}"))
    assert first.status_code == 202 and first.headers["Retry-After"] == "2"
    assert first.json["status"] == "computing"
    deadline = time.monotonic() + 20
    response = first
    while response.status_code == 202 and time.monotonic() < deadline:
        time.sleep(0.05)
        response = as_admin.get(dash.url(f"/export/compare.json?{both}"))
    assert response.status_code == 200 and calls == [1]
    cli = runner.invoke(args=["run", "compare", "dash", "A", "B", "--k", "3", "--json"])
    assert response.get_data(as_text=True) == cli.output
