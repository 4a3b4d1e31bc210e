"""Forms that survive a lost session: a POST that meets a signed-out session or a missing CSRF
token is never processed, and never answered with a bare error page.

A browser form gets a page that says what happened and keeps what was entered (passwords
never): signed in, a "Send it again" form with a fresh token; signed out, a sign-in form that
carries the entries, then that confirmation. A script's request (XMLHttpRequest, htmx) gets
JSON with the message, 401 when signed out and 403 when only the token was lost, so the page
can keep the chosen file and send again after sign-in (static/js/upload.js). `GET /session`
tells a page whether it is signed in, with a fresh token.
"""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, Flask, jsonify, render_template, request, url_for
from flask_login import current_user
from flask_wtf.csrf import CSRFError, generate_csrf
from werkzeug.wrappers import Response

bp = Blueprint("lost_session", __name__)

SIGNED_OUT = "You were signed out in another tab"
SESSION_ENDED = "Your session ended (its cookie is gone or no longer valid)"
# Names of fields never kept or sent back: passwords (the account form's are prefixed pw-).
CSRF_FIELD = "csrf_token"


def _secret(name: str) -> bool:
    """Whether a field holds a secret (never echoed into a page)."""
    return name == CSRF_FIELD or "password" in name or name.startswith("pw-")


def kept_fields() -> list[tuple[str, str]]:
    """The request's form fields worth keeping: every non-secret (name, value), in order."""
    return [(k, v) for k, v in request.form.items(multi=True) if not _secret(k)]


def wants_json() -> bool:
    """A page's script sent the request (XMLHttpRequest or htmx) and reads JSON back."""
    return (
        request.headers.get("X-Requested-With") == "XMLHttpRequest"
        or request.headers.get("HX-Request") == "true"
    )


def _what(signed_in: bool, cookie: bool) -> str:
    """What happened, in words."""
    if signed_in:
        return "This page's security token no longer matches your session (it was renewed)"
    return SIGNED_OUT if cookie else SESSION_ENDED


def _json(status: int, what: str, signed_in: bool) -> tuple[Response, int]:
    """The JSON a page's script shows: what happened, and what it will do."""
    resume = (
        "your upload is sent again with a new token"
        if signed_in
        else "sign in again and your upload will resume"
    )
    return (
        jsonify(
            {
                "error": "session",
                "signed_in": signed_in,
                "message": f"{what}; {resume}. Nothing was stored.",
                "login": url_for("auth.login", next=url_for("lost_session.signed_in")),
            }
        ),
        status,
    )


def _page(what: str, status: int, fields: list[tuple[str, str]] | None = None) -> Any:
    """The page that keeps the entries: a confirmation to send them again, or a sign-in."""
    fields = kept_fields() if fields is None else fields
    files = [f.filename or name for name, f in request.files.items(multi=True) if f]
    dropped = [k for k in request.form if _secret(k) and k != CSRF_FIELD]
    html = render_template(
        "auth/resume.html",
        what=what,
        path=request.path,
        fields=fields,
        fields_json=json.dumps(fields),
        files=files,
        dropped=dropped,
    )
    return html, status


def signed_out() -> Any:
    """require_login's answer to a request without a signed-in person that is not a plain
    page view: JSON 401 for scripts, the keeping page for a form's POST."""
    cookie = bool(request.cookies)
    if wants_json():
        return _json(401, _what(False, cookie), False)
    return _page(_what(False, cookie), 401)


def csrf_lost(error: CSRFError) -> Any:
    """A POST whose CSRF token does not match the session: nothing was done; say so."""
    signed_in = bool(current_user.is_authenticated)
    what = _what(signed_in, bool(request.cookies))
    if request.path.startswith("/api/"):
        return {"error": "Bad Request", "detail": error.description}, 400
    if wants_json():
        return _json(403, what, signed_in)
    if request.accept_mimetypes.best == "application/json":
        # The labeling page's own fetch (it keeps unsent answers itself): the plain refusal.
        return {"error": "Bad Request", "detail": error.description}, 400
    if request.endpoint == "auth.login":
        from ndcg_labeler.views.auth import login_page

        return login_page(f"{what}. Sign in again."), 400
    return _page(what, 400)


def resume_after_login(fields_json: str, path: str) -> str:
    """The confirmation page shown after a sign-in that carried a lost form's entries (after a
    failed one, the sign-in form again, the entries still carried)."""
    try:
        fields = [(str(k), str(v)) for k, v in json.loads(fields_json or "[]")]
    except (ValueError, TypeError):
        fields = []
    fields = [(k, v) for k, v in fields if not _secret(k)]
    signed_in = bool(current_user.is_authenticated)
    return render_template(
        "auth/resume.html",
        what="You are signed in again" if signed_in else "You are not signed in yet",
        path=path,
        fields=fields,
        fields_json=json.dumps(fields),
        files=[],
        dropped=[],
    )


@bp.get("/session")
def session_state() -> Response:
    """Whether this browser is signed in, and a token for its next POST (pages poll it after a
    lost session, to send again)."""
    user = current_user.username if current_user.is_authenticated else None
    response = jsonify({"signed_in": user is not None, "user": user, "csrf_token": generate_csrf()})
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/session/signed-in")
def signed_in() -> str:
    """Where the sign-in opened from a page's message lands: go back to that tab."""
    return render_template("auth/signed_in.html")


def register(app: Flask) -> None:
    """The CSRF error handler (the blueprint is registered with the others)."""
    app.register_error_handler(CSRFError, csrf_lost)
