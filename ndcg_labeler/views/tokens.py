"""A person's API token: create (or replace) it, shown once, or remove it."""

from __future__ import annotations

from flask import Blueprint, flash, make_response, redirect, render_template, url_for
from flask_login import current_user, login_required
from werkzeug.wrappers import Response

from ndcg_labeler.forms.runs import RevokeTokenForm, TokenForm
from ndcg_labeler.services import accounts

bp = Blueprint("tokens", __name__, url_prefix="/account/api-token")


@bp.post("/")
@login_required
def create() -> Response:
    """Create a new token for the logged-in person and show it this once."""
    form = TokenForm()
    if not form.validate_on_submit():
        flash("The form expired; please try again.", "error")
        return redirect(url_for("auth.account"))
    token = accounts.create_token(current_user)
    example = accounts.api_example(current_user)
    page = render_template("tokens/created.html", token=token, example=example)
    response = make_response(page)
    # The token must not linger in caches or the browser's history.
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post("/revoke")
@login_required
def revoke() -> Response:
    """Remove the logged-in person's token."""
    form = RevokeTokenForm()
    if form.validate_on_submit():
        accounts.revoke_token(current_user)
        flash("Your API token was removed; requests with it are refused from now on.", "success")
    return redirect(url_for("auth.account"))
