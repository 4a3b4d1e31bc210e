"""Home page: the test sets the user may open."""

from __future__ import annotations

from flask import Blueprint, current_app, render_template
from flask.typing import ResponseReturnValue
from flask_login import current_user

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
