"""User administration (admins only)."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.extensions import db
from ndcg_labeler.forms.auth import RevokeTheirTokenForm, UserCreateForm, UserEditForm
from ndcg_labeler.models import User
from ndcg_labeler.services import ServiceError, accounts
from ndcg_labeler.views._scoring import page_arg
from ndcg_labeler.views.access import admin_required
from ndcg_labeler.views.auth import stay_logged_in

bp = Blueprint("users", __name__, url_prefix="/users")


@bp.route("/", methods=["GET", "POST"])
@admin_required
def index() -> str | Response:
    """List people and create a new account."""
    form = UserCreateForm()
    if form.validate_on_submit():
        try:
            user = accounts.create_user(
                form.username.data or "",
                form.password.data or "",
                form.role.data or "annotator",
                actor=current_user,
            )
        except accounts.PasswordRefused as exc:
            form.password.errors.append(str(exc))
        except ServiceError as exc:
            form.username.errors.append(str(exc))
        else:
            flash(f"User {user.username} created.", "success")
            return redirect(url_for("users.index"))
    # A team of a thousand: one page at a time, found by part of a name.
    contains = request.args.get("q", "").strip()[: accounts.MAX_USERNAME]
    page, everyone = accounts.people_page(page_arg(), contains)
    return render_template(
        "users/index.html",
        page=page,
        everyone=everyone,
        contains=contains,
        filters={"q": contains} if contains else {},
        form=form,
        min_password=accounts.MIN_PASSWORD,
    )


@bp.route("/<int:user_id>", methods=["GET", "POST"])
@admin_required
def edit(user_id: int) -> str | Response:
    """Change a user's role, activity or password."""
    user = db.get_or_404(User, user_id)
    if user.is_import_source:
        return redirect(url_for("users.index"))
    form = UserEditForm(obj=user)
    if form.validate_on_submit():
        try:
            accounts.update_user(
                current_user,
                user,
                role=form.role.data or user.role,
                active=bool(form.active.data),
                password=form.password.data or None,
            )
        except ServiceError as exc:
            db.session.rollback()
            # Beside the field the refusal is about: the new password, or the admin's own
            # deactivation (else the role).
            if isinstance(exc, accounts.PasswordRefused):
                shown_at = form.password
            elif user.id == current_user.id and not form.active.data:
                shown_at = form.active
            else:
                shown_at = form.role
            shown_at.errors.append(str(exc))
        else:
            if user.id == current_user.id:
                stay_logged_in(user)
            flash(f"User {user.username} saved.", "success")
            return redirect(url_for("users.index"))
    return render_template(
        "users/edit.html", user=user, form=form, revoke_form=RevokeTheirTokenForm()
    )


@bp.post("/<int:user_id>/revoke-token")
@admin_required
def revoke_token(user_id: int) -> Response:
    """Remove a person's API token (a leaked one), leaving their account and sessions as they
    are; deactivating them would also end their sessions and free their pairs."""
    user = db.get_or_404(User, user_id)
    if user.is_import_source:
        return redirect(url_for("users.index"))
    form = RevokeTheirTokenForm()
    if not form.validate_on_submit():
        flash("The form expired; please try again.", "error")
    elif accounts.revoke_token(user, current_user):
        flash(
            f"{user.username}’s API token was revoked: requests with it are refused from now on.",
            "success",
        )
    else:
        flash(f"{user.username} has no API token: nothing to revoke.", "info")
    return redirect(url_for("users.edit", user_id=user.id))
