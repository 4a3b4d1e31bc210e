"""The audit trail for admins: a filtered, paginated list and its CSV and JSON downloads."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

from flask import Blueprint, Response, render_template, request, stream_with_context

from ndcg_labeler.services import audit
from ndcg_labeler.views._scoring import page_arg
from ndcg_labeler.views.access import admin_required

bp = Blueprint("audit", __name__, url_prefix="/audit")


def _filters() -> dict[str, str]:
    """The ?action=, ?user=, ?since= and ?until= filters that are set (an unknown action or a
    date that is not one is ignored, and the page says so)."""
    action = request.args.get("action", "").strip()
    actor = request.args.get("user", "").strip()
    found = {}
    if action in audit.ACTIONS:
        found["action"] = action
    if actor:
        found["user"] = actor[:80]
    for name in ("since", "until"):
        value = request.args.get(name, "").strip()[:40]
        if value and _day(value) is not None:
            found[name] = value
    return found


def _day(value: str | None) -> date | None:
    """A YYYY-MM-DD day, or None."""
    try:
        return date.fromisoformat(value) if value and len(value) == 10 else None
    except ValueError:
        return None


def _query(filters: dict[str, str]) -> dict[str, Any]:
    """The filters as the audit service takes them."""
    return {
        "action": filters.get("action"),
        "actor": filters.get("user"),
        "since": _day(filters.get("since")),
        "until": _day(filters.get("until")),
    }


def _refused_dates() -> list[str]:
    """The ?since= / ?until= values that are not days, to say they were not applied."""
    values = (request.args.get(name, "").strip()[:40] for name in ("since", "until"))
    return [value for value in values if value and _day(value) is None]


def _refused_action() -> str:
    """A ?action= that is no action of the trail (a typo, an edited address), to say it was
    not applied rather than show every event as if it were the filter's."""
    action = request.args.get("action", "").strip()[:80]
    return action if action and action not in audit.ACTIONS else ""


@bp.get("/")
@admin_required
def index() -> str:
    """Admin actions, newest first, filtered by action and/or user."""
    filters = _filters()
    page = audit.events_page(page_arg(), **_query(filters))
    return render_template(
        "audit/index.html",
        page=page,
        filters=filters,
        refused_dates=_refused_dates(),
        refused_action=_refused_action(),
        actions=audit.ACTIONS,
        actors=audit.actor_names(),
    )


def _download(pieces: Iterator[str], mimetype: str, extension: str) -> Response:
    """A streamed attachment: a year of events is sent as it is read, never held whole."""
    response = Response(stream_with_context(pieces), mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="audit.{extension}"'
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/audit.csv")
@admin_required
def export_csv() -> Response:
    """The (filtered) trail as CSV, formula-like cells defused."""
    filters = _filters()
    return _download(audit.events_csv(**_query(filters)), "text/csv", "csv")


@bp.get("/audit.json")
@admin_required
def export_json() -> Response:
    """The (filtered) trail as a JSON array."""
    filters = _filters()
    return _download(audit.events_json(**_query(filters)), "application/json", "json")
