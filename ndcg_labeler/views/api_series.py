"""The JSON API's series: a test set's series, and one series' trend with its baseline and
its scheduled checks (`flask run series SET [NAME] --json`, the series page's JSON twin)."""

from __future__ import annotations

from flask import jsonify, request
from werkzeug.wrappers import Response

from ndcg_labeler.services import ServiceError, live, series
from ndcg_labeler.views import api_params
from ndcg_labeler.views.api_access import bp, visible_test_set


@bp.get("/testsets/<path:test_set>/series")
def list_series(test_set: str) -> Response:
    """The test set's series by name, each with its run count and latest run."""
    found = visible_test_set(test_set)
    listed = [
        {"series": s.name, "runs": s.runs, "latest": s.latest.name, "latest_id": s.latest.id}
        for s in series.list_series(found)
    ]
    return jsonify(series=listed)


@bp.get("/testsets/<path:test_set>/series/<name>")
def series_trend(test_set: str, name: str) -> Response:
    """The series' trend at ?k= (default 10): each run's mean NDCG@k with its interval and its
    change against the previous run, the baseline scheduled runs are gated against, and the
    latest checks; 404 for a series the test set does not have."""
    found = visible_test_set(test_set)
    try:
        options = live.parse_options({"k": request.args.get("k")})
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    trend = series.trend(found, name, options)
    if not (trend.points or trend.left_out):  # as `flask run series` refuses it
        return api_params.error(404, f"test set '{found.name}' has no series named '{name}'")
    base, why = series.baseline(found, name)
    checks = [series.check_json(c) for c in series.list_checks(found, name)]
    return jsonify(
        **trend.to_json(), baseline={"run": base.name if base else None, "why": why}, checks=checks
    )
