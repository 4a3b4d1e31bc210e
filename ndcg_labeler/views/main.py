"""Home page: the test sets the user may open."""

from __future__ import annotations

from flask import Blueprint, render_template
from flask_login import current_user

from ndcg_labeler.services.accounts import visible_test_sets

bp = Blueprint("main", __name__)


@bp.get("/")
def index() -> str:
    """List the visible test sets."""
    return render_template("main/index.html", test_sets=visible_test_sets(current_user))
