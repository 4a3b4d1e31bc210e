"""Pooling (admins): add the unjudged chunks of runs' top ranks to the labeling queue."""

from __future__ import annotations

from collections.abc import Sequence

from flask import Blueprint, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.models import Run
from ndcg_labeler.services import ServiceError, jobs, pooling, runs, whole_number
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
        return whole_number(text, "depth")
    except ServiceError:  # plan_pool says what a depth must be
        return None


def _as_job(chosen: Sequence[Run], depth: int) -> bool:
    """Whether the runs could offer more than NDCG_POOL_JOB_PAIRS pairs (queries × depth)."""
    offered = sum(run.num_queries for run in chosen) * depth
    return offered > current_app.config["NDCG_POOL_JOB_PAIRS"]


@bp.get("/")
@admin_required
def page(test_set_id: int) -> str | tuple[str, int]:
    """Choose runs and a depth; preview the pairs to add and the judged@depth each run reaches."""
    test_set = get_test_set_or_404(test_set_id)
    all_runs = runs.list_runs(test_set)
    chosen = chosen_runs(test_set) if "run" in request.args else all_runs
    depth = _depth()
    plan, error = None, None
    if all_runs:
        try:
            plan = pooling.plan_pool(test_set, chosen, depth)
        except ServiceError as exc:
            error = str(exc)
    page_html = render_template(
        "dashboard/pool.html",
        test_set=test_set,
        all_runs=all_runs,
        runs=chosen,
        depth=request.args.get("depth", DEFAULT_DEPTH),
        plan=plan,
        error=error,
        max_depth=pooling.MAX_DEPTH,
        as_job=plan is not None and _as_job(plan.runs, plan.depth),
    )
    return (page_html, 400) if error else page_html


@bp.post("/")
@admin_required
def add(test_set_id: int) -> Response:
    """Add the previewed pairs (idempotent: pairs already queued are left as they are).

    When the runs could offer more than NDCG_POOL_JOB_PAIRS pairs (_as_job), the job worker
    adds them and the browser goes to the job's progress page.
    """
    test_set = get_test_set_or_404(test_set_id)
    chosen = chosen_runs(test_set)
    depth = _depth()
    if _as_job(chosen, depth or 0):
        try:
            job = jobs.enqueue_pool(test_set, chosen, depth or 0, None, current_user)
        except ServiceError as exc:
            flash(f"Nothing added: {exc}", "error")
        else:
            return redirect(url_for("jobs.show", job_id=job.id))
        return redirect(
            url_for("pooling.page", test_set_id=test_set.id, run=[r.id for r in chosen])
        )
    try:
        added, plan = pooling.add_pool(test_set, chosen, depth)
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
            run=[run.id for run in chosen],
        )
    )
