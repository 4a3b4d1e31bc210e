"""Query drill-down: the run's top k beside the ideal top k, and grading unjudged chunks there."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.services import ServiceError, dashboard, labeling, live, whole_number
from ndcg_labeler.views._scoring import is_htmx, kept_or_400, run_or_404, score_options
from ndcg_labeler.views.access import get_test_set_or_404, require_grades_visible

bp = Blueprint(
    "drilldown",
    __name__,
    url_prefix="/test-sets/<int:test_set_id>/dashboard/runs/<int:run_id>/queries/<int:query_id>",
)


def _context(test_set_id: int, run_id: int, query_id: int) -> dict[str, object]:
    test_set = get_test_set_or_404(test_set_id)
    require_grades_visible(test_set)
    run = run_or_404(test_set, run_id)
    query = dashboard.get_query(test_set, query_id) or abort(404)
    options = score_options()
    kept_or_400(run, options)
    return {
        "test_set": test_set,
        "run": run,
        "query": query,
        "raw_options": options,
        "option_args": live.option_args(options),
        "view": dashboard.drill_down(test_set, run, query, options),
        "my_versions": labeling.my_versions(query, current_user),
        "version": dashboard.version_token(test_set.id),
        "k_choices": live.k_choices(options.k, [run]),
        "policies": live.policies(),
    }


@bp.get("/")
def page(test_set_id: int, run_id: int, query_id: int) -> str:
    """Why the query scores what it does: observed and ideal top k, rank by rank."""
    return render_template("dashboard/query.html", **_context(test_set_id, run_id, query_id))


@bp.get("/_detail")
def fragment(test_set_id: int, run_id: int, query_id: int) -> str:
    """The drill-down's live part."""
    return render_template("dashboard/_query.html", **_context(test_set_id, run_id, query_id))


def _optional_whole(name: str) -> int | None:
    """The form field as a whole number, None when blank; a ServiceError when not one."""
    text = request.form.get(name, "")
    return whole_number(text, name) if text.strip() else None


@bp.post("/grade")
def grade(test_set_id: int, run_id: int, query_id: int) -> str | Response | tuple[str, int]:
    """Grade an unjudged chunk as the current user; htmx gets the updated scores in place."""
    test_set = get_test_set_or_404(test_set_id)
    require_grades_visible(test_set)
    run = run_or_404(test_set, run_id)
    query = dashboard.get_query(test_set, query_id) or abort(404)
    options = score_options()
    kept_or_400(run, options)  # before saving: the page it answers with would be refused
    error, conflict = None, None
    chunk_id, tried = -1, None
    try:
        chunk_id = whole_number(request.form.get("chunk_id", ""), "chunk_id")
        tried = _optional_whole("grade")  # none: grade_chunk asks for one
        dashboard.grade_chunk(
            test_set,
            query,
            chunk_id,
            tried,
            current_user._get_current_object(),
            _optional_whole("version"),  # none: no check; not a number: refused, not unchecked
        )
    except labeling.Conflict as exc:
        conflict = {"stored": exc, "tried": tried, "chunk_id": chunk_id}
    except ServiceError as exc:
        error = str(exc)
    if conflict is not None:  # nothing saved: show both grades, offer to replace (409)
        context = _context(test_set_id, run_id, query_id)
        template = "dashboard/_query.html" if is_htmx() else "dashboard/query.html"
        return render_template(template, **context, grade_conflict=conflict), 409
    if is_htmx():
        context = _context(test_set_id, run_id, query_id)
        return render_template("dashboard/_query.html", **context, grade_error=error)
    if error:
        flash(f"Not saved: {error}", "error")
    else:
        flash("Grade saved.", "success")
    return redirect(
        url_for(
            "drilldown.page",
            test_set_id=test_set_id,
            run_id=run_id,
            query_id=query_id,
            **live.option_args(options),
        )
    )
