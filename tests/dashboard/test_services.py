"""Dashboard services: overview and query table numbers against hand computation and score_run."""

from __future__ import annotations

import math

import pytest
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, User
from ndcg_labeler.services import ServiceError, live
from ndcg_labeler.services import dashboard as dashboard_service
from ndcg_labeler.services.dashboard.overview import TableQuery
from ndcg_labeler.services.live import ScoreOptions, score_run
from ndcg_labeler.views import figures
from tests.factory import A3, B3, IDCG3_Q1, L3, Demo, grade, the_test_set

K3 = ScoreOptions(k=3)


def _admin() -> User:
    user = User(username="boss", role="admin", active=True)
    db.session.add(user)
    db.session.commit()
    return user


def test_overview_means_and_coverage_by_hand(ctx: Flask, dash: Demo) -> None:
    overview = dashboard_service.overview(the_test_set(dash), _admin(), K3)
    a, b = overview.runs
    assert (a.run.name, b.run.name) == ("A", "B")
    defined_a = [v for v in A3.values() if v is not None]
    assert a.mean == pytest.approx(sum(defined_a) / 4)
    assert b.mean == pytest.approx((1.0 + B3["q2"] + 1.0 + 0.0) / 4)
    # q4 is undefined in both; B lacks q4 and q5 (q5 scores 0, q4 stays undefined).
    assert (a.scores.queries_in_mean, a.scores.num_undefined, a.scores.num_missing) == (4, 1, 0)
    assert (b.scores.queries_in_mean, b.scores.num_undefined, b.scores.num_missing) == (4, 1, 2)
    # judged@3 of A: q1 3/3 (c, d, a), q2 3/3, q3 1/3, q4 0 (a has no grade for q4), q5 1/3.
    assert a.scores.mean_judged_at_k == pytest.approx((1 + 1 + 1 / 3 + 0 + 1 / 3) / 5)
    assert overview.options.k == 3
    assert overview.to_json()["runs"][0]["mean_ndcg"] == score_run(a.run, K3).mean_ndcg
    # Imported qrels put their 10 pairs in the queue; imported grades are not a human pass.
    assert (overview.progress.pairs, overview.progress.done) == (10, 0)


def test_means_over_k_line(ctx: Flask, dash: Demo) -> None:
    run = db.session.get_one(Run, dash.run_a)
    means = dashboard_service.means_over_k(run, ScoreOptions())
    assert means == [score_run(run, ScoreOptions(k=k)).mean_ndcg for k in live.K_CHOICES]
    # At k=1: q1 c(1) vs x(3) = 1/3; q2 1; q3 f2 unjudged = 0; q5 1.
    assert means[0] == pytest.approx((1 / 3 + 1 + 0 + 1) / 4)


def test_score_run_reports_the_k_asked_for_after_another_k(ctx: Flask, dash: Demo) -> None:
    """Regression: k=10 and k=5 share one live state; each result must say its own k."""
    run = db.session.get_one(Run, dash.run_a)
    assert score_run(run, ScoreOptions(k=10)).to_json()["k"] == 10
    five = score_run(run, ScoreOptions(k=5))
    assert (five.k, five.options.k, five.to_json()["k"]) == (5, 5, 5)


def test_query_table_default_is_gap_descending(ctx: Flask, dash: Demo) -> None:
    run = db.session.get_one(Run, dash.run_a)
    table = dashboard_service.query_table(run, K3, TableQuery())
    gaps = {r.score.qid: r.score.gap for r in table.rows}
    # q1: IDCG 5.8928 − DCG 2.5; q3: 1 − 1/log2 3; the others 0 (ties by qid).
    assert gaps["q1"] == pytest.approx(IDCG3_Q1 - 2.5)
    assert gaps["q3"] == pytest.approx(1 - 1 / L3)
    assert [r.score.qid for r in table.rows] == ["q1", "q3", "q2", "q4", "q5"]
    assert [r.score.qid for r in table.rows] == [
        q["qid"] for q in score_run(run, K3).to_json()["queries"]
    ]
    assert table.matched == 5 and table.paging.pages == 1


def test_query_table_rows_bands_and_reasons(ctx: Flask, dash: Demo) -> None:
    run = db.session.get_one(Run, dash.run_a)
    rows = {r.score.qid: r for r in dashboard_service.query_table(run, K3, TableQuery()).rows}
    assert rows["q1"].score.ndcg == pytest.approx(A3["q1"])
    assert rows["q1"].band == "poor"  # 0.4242
    assert rows["q3"].band == "fair"  # 0.6309
    assert rows["q2"].band == "excellent"
    assert rows["q4"].band == "undefined"
    assert rows["q4"].reason == "no relevant judged chunk: IDCG is 0"
    assert rows["q4"].score.one_minus_ndcg is None
    assert rows["q1"].score.one_minus_ndcg == pytest.approx(1 - A3["q1"])
    assert rows["q1"].score.num_rel == 4  # a, b, c, x have grade >= 1
    assert rows["q1"].reason is None


def test_bands_at_the_boundaries() -> None:
    assert [dashboard_service.band(v) for v in (1.0, 0.9, 0.8999, 0.7, 0.5, 0.4999, 0.0, None)] == [
        "excellent",
        "excellent",
        "good",
        "good",
        "fair",
        "poor",
        "poor",
        "undefined",
    ]
    assert dashboard_service.band(math.nan) == "undefined"


@pytest.mark.parametrize(
    ("sort", "direction", "expected"),
    [
        ("ndcg", "asc", ["q1", "q3", "q2", "q5", "q4"]),  # undefined last either way
        ("ndcg", "desc", ["q2", "q5", "q3", "q1", "q4"]),  # ties (1.0) by qid
        ("qid", "desc", ["q5", "q4", "q3", "q2", "q1"]),
        ("query", "asc", ["q3", "q2", "q5", "q1", "q4"]),  # "<b>dress..." sorts first
        ("query", "desc", ["q4", "q1", "q5", "q2", "q3"]),
        ("judged", "asc", ["q4", "q3", "q5", "q1", "q2"]),
        ("relevant", "desc", ["q1", "q2", "q3", "q5", "q4"]),
        ("loss", "desc", ["q1", "q3", "q2", "q5", "q4"]),
        ("dcg", "desc", ["q2", "q1", "q5", "q3", "q4"]),
        ("idcg", "asc", ["q4", "q3", "q5", "q2", "q1"]),
    ],
)
def test_query_table_sorts_any_column(
    ctx: Flask, dash: Demo, sort: str, direction: str, expected: list[str]
) -> None:
    run = db.session.get_one(Run, dash.run_a)
    table = dashboard_service.query_table(run, K3, TableQuery(sort, direction))
    assert [r.score.qid for r in table.rows] == expected


@pytest.mark.parametrize(
    ("direction", "expected"),
    [("asc", ["q3", "q2", "q1", "q4", "q5"]), ("desc", ["q1", "q2", "q3", "q4", "q5"])],
)
def test_least_judged_first_leaves_queries_missing_from_the_run_last(
    ctx: Flask, dash: Demo, direction: str, expected: list[str]
) -> None:
    # "Label next: this run's least judged queries" sorts by judged@k ascending. B has no
    # ranking for q4 and q5: nothing of theirs can be labeled, so they go last (as undefined
    # values do), not first at 0%. Judged@3 by hand: q1 x a b 3/3, q2 e2 e1 ghost 2/3, q3 f1 1/3.
    run_b = db.session.get_one(Run, dash.run_b)
    table = dashboard_service.query_table(run_b, K3, TableQuery("judged", direction))
    assert [r.score.qid for r in table.rows] == expected
    judged = {r.score.qid: r.score.judged_at_k for r in table.rows}
    assert [judged[q] for q in ("q1", "q2", "q3")] == pytest.approx([1.0, 2 / 3, 1 / 3])


def test_query_table_filters_by_text_and_band(ctx: Flask, dash: Demo) -> None:
    run_b = db.session.get_one(Run, dash.run_b)
    by_text = dashboard_service.query_table(run_b, K3, TableQuery(text="EXPENSE"))
    assert [r.score.qid for r in by_text.rows] == ["q2"]
    by_qid = dashboard_service.query_table(run_b, K3, TableQuery(text="q5"))
    assert [r.score.qid for r in by_qid.rows] == ["q5"]
    missing = dashboard_service.query_table(run_b, K3, TableQuery(band="missing"))
    assert sorted(r.score.qid for r in missing.rows) == ["q4", "q5"]
    assert all(r.score.missing for r in missing.rows)
    poor = dashboard_service.query_table(run_b, K3, TableQuery(band="poor"))
    assert [r.score.qid for r in poor.rows] == ["q5"]  # missing with gain: 0
    assert poor.band_counts == {
        "excellent": 2,
        "good": 1,
        "fair": 0,
        "poor": 1,
        "undefined": 1,
        "missing": 2,
    }


def test_query_table_pages(ctx: Flask, dash: Demo) -> None:
    run = db.session.get_one(Run, dash.run_a)
    first = dashboard_service.query_table(run, K3, TableQuery(), per_page=2)
    assert (first.paging.pages, first.paging.first, first.paging.last) == (3, 1, 2)
    last = dashboard_service.query_table(run, K3, TableQuery(page=99), per_page=2)
    assert (last.paging.page, [r.score.qid for r in last.rows]) == (3, ["q5"])
    assert figures.histogram(last).title == "Distribution of NDCG@3 over 4 queries"


def test_parse_options_and_table_query() -> None:
    options = live.parse_options(
        {"k": "5", "gain": "exp", "ideal": "retrieved", "aggregation": "max", "judged_only": "1"}
    )
    assert options == ScoreOptions(5, "exp", "retrieved", True, "max")
    assert live.option_args(options) == {
        "k": 5,
        "gain": "exp",
        "ideal": "retrieved",
        "judged_only": 1,
        "aggregation": "max",
    }
    assert live.option_args(ScoreOptions()) == {}
    for bad in ({"k": "x"}, {"k": "0"}, {"gain": "log"}, {"aggregation": "vote"}):
        with pytest.raises(ServiceError):
            live.parse_options(bad)
    query = dashboard_service.parse_table_query({"sort": "ndcg", "dir": "asc", "page": ""})
    assert (query.sort, query.direction, query.page) == ("ndcg", "asc", 1)
    # A page that is no page number is refused, as on every listing (tests/web/test_paging.py).
    with pytest.raises(ServiceError, match="page must be a whole number of at least 1, not 'x'"):
        dashboard_service.parse_table_query({"page": "x"})
    assert query.sort_args("ndcg") == {"sort": "ndcg", "dir": "desc"}
    assert query.sort_args("qid") == {"sort": "qid", "dir": "asc"}
    assert query.sort_args("gap") == {}  # the default: gap descending
    for bad in ({"sort": "evil"}, {"dir": "up"}, {"band": "great"}):
        with pytest.raises(ServiceError):
            dashboard_service.parse_table_query(bad)


def test_versions_move_with_grades_and_runs(ctx: Flask, dash: Demo) -> None:
    test_set = the_test_set(dash)
    labels, runs = dashboard_service.versions(test_set.id)
    grade(test_set, "q4", "a", 2, "maria")
    assert dashboard_service.versions(test_set.id) == (labels + 1, runs)
    assert dashboard_service.version_token(test_set.id) == f"{labels + 1}.{runs}"
    assert dashboard_service.versions(999_999) is None
