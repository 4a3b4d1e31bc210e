"""Series pages: a test set's series, and one series' trend with its checks and alerts."""

from __future__ import annotations

from flask import Blueprint, flash, jsonify, redirect, render_template, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import ServiceError, endpoints, live, series
from ndcg_labeler.views import charts
from ndcg_labeler.views._scoring import k_arg
from ndcg_labeler.views.access import admin_required, get_test_set_or_404

bp = Blueprint("series", __name__, url_prefix="/test-sets/<int:test_set_id>/series")


def _compare_url(test_set: TestSet, point: series.TrendPoint, k: int) -> str | None:
    if point.previous is None:
        return None
    chosen = [point.previous.id, point.run.id]
    return url_for("compare.page", test_set_id=test_set.id, run=chosen, k=k)


def _chart(test_set: TestSet, found: series.Trend) -> charts.Chart:
    points = []
    for p in found.points:
        mean = "undefined" if p.mean is None else f"{p.mean:.4f}"
        note = f"{p.run.name}: NDCG@{found.k} {mean}"
        if p.delta is not None:
            pv = "—" if p.p_value is None else f"{p.p_value:.3g}"
            note += f", Δ {p.delta:+.4f} vs {p.previous.name if p.previous else ''} (p {pv})"
            note += " — open the comparison"
        points.append(
            charts.TrendPoint(
                p.run.name,
                p.mean,
                p.ci_low,
                p.ci_high,
                p.judged,
                p.direction,
                _compare_url(test_set, p, found.k),
                note,
            )
        )
    return charts.trend(found.name, found.k, points)


@bp.get("/")
def index(test_set_id: int) -> str:
    """The test set's series, each with its run count and latest run."""
    test_set = get_test_set_or_404(test_set_id)
    return render_template(
        "series/index.html", test_set=test_set, found=series.list_series(test_set)
    )


@bp.get("/<name>")
def show(test_set_id: int, name: str) -> str:
    """One series over time: the chart, the runs with their change, checks and alerts."""
    test_set = get_test_set_or_404(test_set_id)
    k = k_arg()
    found = series.trend(test_set, name, live.ScoreOptions(k=k))
    base, why = series.baseline(test_set, name)
    scheduled = [
        (e, series.next_run(e))
        for e in endpoints.list_endpoints(test_set)
        if e.schedule and e.schedule_series == name
    ]
    checks = series.list_checks(test_set, name)
    every_run = series.series_runs(test_set, name)
    run_names = {run.id: run.name for run in every_run}
    return render_template(
        "series/show.html",
        test_set=test_set,
        name=name,
        trend=found,
        chart=_chart(test_set, found) if found.points else None,
        compare_urls={p.run.id: _compare_url(test_set, p, k) for p in found.points},
        baseline=base,
        baseline_why=why,
        pinned=series.pinned_baseline(test_set, name),
        scheduled=scheduled,
        checks=checks,
        # Only the newest check's alert is current: a later pass means the series recovered.
        alert=checks[0] if checks and checks[0].alert else None,
        run_names=run_names,
        series_runs=every_run,
        k=k,
        k_choices=live.k_choices(k),
    )


@bp.get("/<name>/json")
def show_json(test_set_id: int, name: str) -> Response:
    """The series page's JSON twin: the trend, the baseline and the latest checks."""
    test_set = get_test_set_or_404(test_set_id)
    found = series.trend(test_set, name, live.ScoreOptions(k=k_arg()))
    base, why = series.baseline(test_set, name)
    checks = [series.check_json(c) for c in series.list_checks(test_set, name)]
    return jsonify(
        **found.to_json(), baseline={"run": base.name if base else None, "why": why}, checks=checks
    )


@bp.post("/<name>/baseline")
@admin_required
def pin(test_set_id: int, name: str) -> Response:
    """Pin a run of the series as its baseline, or unpin (admins)."""
    test_set = get_test_set_or_404(test_set_id)
    try:
        run: Run | None = series.pin_baseline(
            test_set, name, request.form.get("run", "").strip() or None, current_user
        )
    except ServiceError as exc:
        flash(f"Could not pin the baseline: {exc}", "error")
    else:
        what = f"run {run.name}" if run else "the last passing run"
        flash(f"Series {name} is now gated against {what}.", "success")
    return redirect(url_for("series.show", test_set_id=test_set.id, name=name))
