"""Home page: the test sets the user may open."""

from __future__ import annotations

from flask import Blueprint, current_app, redirect, render_template, request
from flask.typing import ResponseReturnValue
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.services import accounts

bp = Blueprint("main", __name__)


@bp.get("/")
def index() -> str:
    """List the visible test sets."""
    return render_template("main/index.html", test_sets=accounts.visible_test_sets(current_user))


@bp.get("/favicon.ico")
def favicon() -> ResponseReturnValue:
    """Browsers ask for /favicon.ico whatever the page links: answer with ours, not a 404."""
    return current_app.send_static_file("favicon.svg")


@bp.route("/testsets/<path:rest>", methods=["GET", "POST"])
def old_test_sets_address(rest: str) -> Response:
    """Pages once lived under /testsets/ too (judges, endpoints): one form now, /test-sets/.

    308, not 301: a form posted to an old address is posted again, with its method and body,
    so old links, bookmarks and open forms keep working. The API keeps its /api/testsets/.
    """
    query = request.query_string.decode()
    target = f"{request.script_root}/test-sets/{rest}" + (f"?{query}" if query else "")
    return redirect(target, 308)
