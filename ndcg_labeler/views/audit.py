"""The audit trail for admins: a filtered, paginated list and its CSV and JSON downloads."""

from __future__ import annotations

from flask import Blueprint, Response, render_template, request

from ndcg_labeler.services import audit
from ndcg_labeler.views._scoring import page_arg
from ndcg_labeler.views.access import admin_required

bp = Blueprint("audit", __name__, url_prefix="/audit")


def _filters() -> dict[str, str]:
    """The ?action= and ?user= filters that are set (an unknown action is ignored)."""
    action = request.args.get("action", "").strip()
    actor = request.args.get("user", "").strip()
    found = {}
    if action in audit.ACTIONS:
        found["action"] = action
    if actor:
        found["user"] = actor[:80]
    return found


@bp.get("/")
@admin_required
def index() -> str:
    """Admin actions, newest first, filtered by action and/or user."""
    filters = _filters()
    page = audit.events_page(page_arg(), action=filters.get("action"), actor=filters.get("user"))
    return render_template(
        "audit/index.html",
        page=page,
        filters=filters,
        actions=audit.ACTIONS,
        actors=audit.actor_names(),
    )


def _download(text: str, mimetype: str, extension: str) -> Response:
    response = Response(text, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="audit.{extension}"'
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/audit.csv")
@admin_required
def export_csv() -> Response:
    """The (filtered) trail as CSV, formula-like cells defused."""
    filters = _filters()
    text = audit.events_csv(filters.get("action"), filters.get("user"))
    return _download(text, "text/csv", "csv")


@bp.get("/audit.json")
@admin_required
def export_json() -> Response:
    """The (filtered) trail as a JSON array."""
    filters = _filters()
    text = audit.events_json(filters.get("action"), filters.get("user"))
    return _download(text, "application/json", "json")
