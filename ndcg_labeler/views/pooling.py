"""Pooling (admins): add the unjudged chunks of runs' top ranks to the labeling queue."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from ndcg_labeler.services import ServiceError
from ndcg_labeler.services import dashboard as dashboard_service
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.views._scoring import chosen_runs
from ndcg_labeler.views.access import admin_required, get_test_set_or_404

bp = Blueprint("pooling", __name__, url_prefix="/test-sets/<int:test_set_id>/dashboard/pool")

DEFAULT_DEPTH = 10


def _depth() -> int | None:
    """The depth field (None when it is not a whole number)."""
    text = request.values.get("depth")
    if text is None or not text.strip():
        return DEFAULT_DEPTH
    try:
        return int(text)
    except ValueError:
        return None


@bp.get("/")
@admin_required
def page(test_set_id: int) -> str | tuple[str, int]:
    """Choose runs and a depth; preview the pairs to add and the judged@depth each run reaches."""
    test_set = get_test_set_or_404(test_set_id)
    all_runs = run_service.list_runs(test_set)
    runs = chosen_runs(test_set) if "run" in request.args else all_runs
    depth = _depth()
    plan, error = None, None
    if all_runs:
        try:
            plan = dashboard_service.plan_pool(test_set, runs, depth)
        except ServiceError as exc:
            error = str(exc)
    page_html = render_template(
        "dashboard/pool.html",
        test_set=test_set,
        all_runs=all_runs,
        runs=runs,
        depth=request.args.get("depth", DEFAULT_DEPTH),
        plan=plan,
        error=error,
        max_depth=dashboard_service.MAX_DEPTH,
    )
    return (page_html, 400) if error else page_html


@bp.post("/")
@admin_required
def add(test_set_id: int) -> Response:
    """Add the previewed pairs (idempotent: pairs already queued are left as they are)."""
    test_set = get_test_set_or_404(test_set_id)
    runs = chosen_runs(test_set)
    depth = _depth()
    try:
        added, plan = dashboard_service.add_pool(test_set, runs, depth)
    except ServiceError as exc:
        flash(f"Nothing added: {exc}", "error")
    else:
        flash(
            f"Added {added} pair{'s' if added != 1 else ''} to the labeling queue "
            f"(source {plan.source}).",
            "success",
        )
    return redirect(
        url_for(
            "pooling.page",
            test_set_id=test_set.id,
            depth=request.form.get("depth", DEFAULT_DEPTH),
            run=[run.id for run in runs],
        )
    )
