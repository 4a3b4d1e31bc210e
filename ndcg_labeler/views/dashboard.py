"""Dashboards: the test-set overview, a run's query table, and the live "changed?" check."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, current_app, jsonify, render_template, request
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.models import TestSet
from ndcg_labeler.services import ServiceError, checklist, dashboard, judges, live, ppi
from ndcg_labeler.views import figures
from ndcg_labeler.views._scoring import kept_or_400, run_or_404, score_options
from ndcg_labeler.views.access import get_test_set_or_404, require_grades_visible

bp = Blueprint("dashboard", __name__, url_prefix="/test-sets/<int:test_set_id>/dashboard")

# Header htmx turns into an event; the live regions listen for it on <body>.
CHANGED_EVENT = "scores-changed"
# Where `make docs` serves the manual, when NDCG_MANUAL_URL names no published copy.
DEFAULT_MANUAL_URL = "http://127.0.0.1:8000/"


@bp.app_template_global()
def merged(*parts: dict[str, Any]) -> dict[str, Any]:
    """Dicts merged left to right (URL arguments in templates: options, sort, page...)."""
    out: dict[str, Any] = {}
    for part in parts:
        out.update(part)
    return out


@bp.app_template_global()
def label_sources() -> list[tuple[str, str]]:
    """(value, text) of the label sources a score view may use: people, then each judge."""
    out = [("human", "people (and imported qrels)")]
    for judge in judges.list_judges():
        out.append((f"machine:{judge.name}", f"machine: {judge.name} only"))
        out.append((f"fill:{judge.name}", f"people, filled in by {judge.name}"))
        out.append((f"ppi:{judge.name}", f"PPI++: {judge.name}, corrected by its audit"))
    return out


@bp.app_template_global()
def audit_of(test_set: TestSet, labels: str) -> ppi.AuditStatus | None:
    """The judge's audit status beside a machine:, fill: or ppi: mean; None for human labels."""
    return ppi.audit_status(test_set, labels)


@bp.app_template_global()
def run_band(scores: live.RunScores) -> str:
    """Band of a run's mean NDCG@k, or "not enough labels" on thin evidence (bands.py)."""
    return dashboard.mean_band(scores.mean_ndcg, scores.queries_in_mean, scores.mean_judged_at_k)


@bp.app_context_processor
def evidence_limits() -> dict[str, int]:
    """The compare page shows no interval from fewer queries than this."""
    return {"min_interval_queries": dashboard.MIN_INTERVAL_QUERIES}


@bp.app_template_global()
def evidence_rule() -> str:
    """The rule a run's mean must meet to get a band, for legends."""
    return (
        f"a band is given to a mean over at least {dashboard.MIN_QUERIES} queries with "
        f"a mean judged@k of at least {dashboard.MIN_JUDGED:.0%}; otherwise "
        f"“{dashboard.NOT_ENOUGH}”"
    )


@bp.app_template_global()
def conventions_url(anchor: str = "") -> str:
    """The manual's Scoring conventions page (NDCG_MANUAL_URL), at `anchor` when given."""
    base = current_app.config.get("NDCG_MANUAL_URL") or DEFAULT_MANUAL_URL
    return base.rstrip("/") + "/reference/scoring/" + (f"#{anchor}" if anchor else "")


@bp.app_template_global()
def ndcg_band(value: float | None) -> str:
    """Band name of an NDCG value (excellent, good, fair, poor) or "undefined"."""
    return dashboard.band(value)


def _overview_context(test_set_id: int) -> dict[str, object]:
    test_set = get_test_set_or_404(test_set_id)
    options = score_options()
    overview = dashboard.overview(test_set, current_user, options)
    return {
        "test_set": test_set,
        "raw_options": options,
        "option_args": live.option_args(options),
        "overview": overview,
        "k_chart": figures.over_k(overview),
        "k_choices": live.k_choices(options.k),
        "policies": live.policies(),
    }


@bp.get("/")
def overview(test_set_id: int) -> str:
    """Every run's mean NDCG@k, what the mean covers, judged@k, and the labeling progress,
    under the test set's checklist (its state and the next action)."""
    context = _overview_context(test_set_id)
    limit = current_app.config["NDCG_POOL_JOB_PAIRS"]
    found = checklist.checklist(context["test_set"], current_user, limit)  # type: ignore[arg-type]
    return render_template("dashboard/overview.html", checklist=found, **context)


@bp.get("/_overview")
def overview_fragment(test_set_id: int) -> str:
    """The overview's live part (re-fetched by htmx when the grades or runs changed)."""
    return render_template("dashboard/_overview.html", **_overview_context(test_set_id))


@bp.get("/live", endpoint="live")
def live_check(test_set_id: int) -> Response:
    """labels_version and runs_version (one SELECT); an htmx event when `since` is stale."""
    get_test_set_or_404(test_set_id)
    found = dashboard.versions(test_set_id) or abort(404)
    token = f"{found[0]}.{found[1]}"
    since = request.args.get("since")
    changed = since is not None and since != token
    response = jsonify(labels_version=found[0], runs_version=found[1], token=token, changed=changed)
    if changed:
        response.headers["HX-Trigger"] = CHANGED_EVENT
    response.headers["Cache-Control"] = "no-store"
    return response


def _table_context(test_set_id: int, run_id: int) -> dict[str, object]:
    test_set = get_test_set_or_404(test_set_id)
    # Per-query DCG, IDCG and relevant counts are others' grades, summed up; blind sets keep
    # them from annotators as they keep the grades.
    require_grades_visible(test_set)
    run = run_or_404(test_set, run_id)
    options = score_options()
    kept_or_400(run, options)
    try:
        query = dashboard.parse_table_query(request.args)
    except ServiceError as exc:
        abort(400, description=str(exc))
    table = dashboard.query_table(run, options, query)
    # Optional columns: any measure name (?measure=bpref,P(rel=2)@5), kept in every link.
    picked = ", ".join(
        n.strip() for v in request.args.getlist("measure") for n in v.split(",") if n.strip()
    )
    extra: list[live.MeasureValues] = []
    measure_error = None
    try:
        extra = live.named_measures(run, [picked] if picked else [], options)
    except ServiceError as exc:
        measure_error = str(exc)
    option_args = live.option_args(options)
    if picked and measure_error is None:
        option_args["measure"] = picked
    return {
        "test_set": test_set,
        "run": run,
        "raw_options": options,
        "option_args": option_args,
        "plain_option_args": live.option_args(options),
        "extra": [(m.measure.shown, m.by_qid()) for m in extra],
        "picked": picked,
        "measure_error": measure_error,
        "table": table,
        "estimate": ppi.run_estimate(run, options),
        "k_chart": figures.run_over_k(run, options),
        "histogram": figures.histogram(table),
        "version": dashboard.version_token(test_set.id),
        "k_choices": live.k_choices(options.k, [run]),
        "policies": live.policies(),
        "band_filters": dashboard.BAND_FILTERS,
    }


@bp.get("/runs/<int:run_id>")
def run_table(test_set_id: int, run_id: int) -> str:
    """A run's queries at k: largest gap first, sortable, filterable, 100 per page."""
    return render_template("dashboard/run.html", **_table_context(test_set_id, run_id))


@bp.get("/runs/<int:run_id>/_table")
def run_table_fragment(test_set_id: int, run_id: int) -> str:
    """The query table's live part."""
    return render_template("dashboard/_run.html", **_table_context(test_set_id, run_id))
