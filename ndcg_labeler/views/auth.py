"""Login, logout, own password and preferences."""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    abort,
    current_app,
    flash,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_login import (
    current_user,
    login_remembered,
    login_required,
    login_user,
    logout_user,
)
from werkzeug.wrappers import Response

from ndcg_labeler import throttle
from ndcg_labeler.extensions import db
from ndcg_labeler.forms.auth import ChangePasswordForm, LoginForm, PreferencesForm
from ndcg_labeler.models import User
from ndcg_labeler.services import ServiceError, accounts, audit, sso, whole_number
from ndcg_labeler.views import lost_session
from ndcg_labeler.web_extensions import login_manager

bp = Blueprint("auth", __name__)


@login_manager.user_loader
def load_user(cookie_id: str) -> User | None:
    """Flask-Login hook: the cookie's user, if still active and the cookie still current.

    The cookie holds `id:session_token` (User.get_id); a password, role or activity change
    draws a new token, so cookies issued before it load nobody.
    """
    user_id, _, token = cookie_id.partition(":")
    try:
        user = db.session.get(User, whole_number(user_id, "user id")) if token else None
    except ServiceError:
        return None
    if user is None or not user.is_active:
        return None
    return user if secrets.compare_digest(user.session_token, token) else None


def _safe_next(target: str | None) -> str:
    """Only follow relative `next` targets on this site (no open redirect)."""
    if target and urlsplit(target).netloc == "" and target.startswith("/") and "//" not in target:
        return target
    return url_for("main.index")


def login_page(message: str) -> str:
    """The login form with a message, the username kept (after a lost CSRF token)."""
    form = LoginForm(formdata=None, username=request.form.get("username", ""))
    form.username.errors = [message]
    return _login_form(form)


@bp.route("/login", methods=["GET", "POST"])
def login() -> str | Response:
    """Show and check the login form; a sign-in that carries a lost form's entries (the
    resume page's) shows them to send again."""
    if current_user.is_authenticated:
        return redirect(url_for("main.index"))
    form = LoginForm()
    local = current_app.config["NDCG_LOCAL_LOGIN"]
    if not local and request.method == "POST":
        flash("Passwords are switched off here: sign in through single sign-on.", "error")
    elif form.validate_on_submit():
        keys = throttle.login_keys(form.username.data or "")
        refusal = throttle.refused(throttle.LOGIN, keys)
        if refusal is not None:
            return _too_many(refusal)
        user = accounts.authenticate(form.username.data or "", form.password.data or "")
        if user is None:
            throttle.failed(throttle.LOGIN, keys)
            # Only attempts the limits let through get here: a flood adds no more events.
            audit.sign_in_failed(form.username.data or "", _address())
            flash("Unknown username or wrong password.", "error")
        else:
            audit.signed_in(user, "password", _address())
            login_user(user, remember=bool(form.remember.data))
            if "resume_fields" in request.form:
                path = _safe_next(request.form.get("resume_path"))
                return lost_session.resume_after_login(request.form["resume_fields"], path)
            return redirect(_safe_next(request.args.get("next")))
    if "resume_fields" in request.form:
        # A failed sign-in from the resume page keeps the lost form's entries on that page.
        path = _safe_next(request.form.get("resume_path"))
        return lost_session.resume_after_login(request.form["resume_fields"], path)
    return _login_form(form)


def _address() -> str:
    """The client's address as the app sees it (behind a proxy: as ProxyFix set it)."""
    return request.remote_addr or "-"


def _login_form(form: LoginForm) -> str:
    """The login page: the password form (unless switched off) and single sign-on's button."""
    return render_template(
        "auth/login.html",
        form=form,
        local_login=current_app.config["NDCG_LOCAL_LOGIN"],
        sso_name=current_app.config["NDCG_OIDC_NAME"] if sso.enabled() else None,
        next=request.args.get("next"),
    )


@bp.get("/login/sso")
def sso_start() -> Response:
    """Send the browser to the identity provider (authorization code flow with PKCE)."""
    if not sso.enabled():
        abort(404)  # no identity provider is configured: there is nothing to sign in with
    next_url = _safe_next(request.args.get("next"))
    try:
        url, pending = sso.begin(url_for("auth.sso_callback", _external=True), next_url)
    except ServiceError as exc:
        flash(f"Single sign-on is unavailable: {exc}", "error")
        return redirect(url_for("auth.login"))
    session["sso"] = pending.as_dict()
    return redirect(url)


@bp.get("/login/sso/callback")
def sso_callback() -> Response:
    """The identity provider's answer: sign the person in, or say why not."""
    if not sso.enabled():
        abort(404)
    pending = sso.Pending.from_dict(session.pop("sso", None))
    try:
        user = sso.finish(
            request.args.to_dict(), pending, url_for("auth.sso_callback", _external=True)
        )
    except ServiceError as exc:
        flash(f"Single sign-on failed: {exc}", "error")
        return redirect(url_for("auth.login"))
    audit.signed_in(user, "sso", _address())
    login_user(user)
    return redirect(_safe_next(pending.next if pending else None))


def stay_logged_in(user: User) -> None:
    """Log this browser in again after its own user's session token changed.

    The other browsers' cookies carry the old token and stop working; this one gets the new
    one, with a fresh remember-me cookie when it had one.
    """
    login_user(user, remember=login_remembered())


def _too_many(refusal: throttle.Refusal) -> Response:
    """429: too many failed logins for this account or address, and when to try again."""
    response = make_response(render_template("auth/throttled.html", refusal=refusal), 429)
    response.headers["Retry-After"] = str(refusal.retry_after)
    return response


@bp.post("/logout")
@login_required
def logout() -> Response:
    """End the session (POST, so it is CSRF-protected)."""
    audit.signed_out(current_user)
    logout_user()
    flash("You are logged out.", "info")
    return redirect(url_for("auth.login"))


@bp.route("/account", methods=["GET", "POST"])
@login_required
def account() -> str | Response:
    """Change one's own password and preferences."""
    password_form = ChangePasswordForm(prefix="pw")
    prefs_form = PreferencesForm(prefix="prefs", obj=current_user)
    # A taken-over session must not guess the current password without end: the login's
    # counter for this account counts wrong ones here too.
    keys = throttle.login_keys(current_user.username)
    submitted = bool(password_form.submit.data) and password_form.validate_on_submit()
    refusal = throttle.refused(throttle.LOGIN, keys) if submitted else None
    if refusal is not None:
        password_form.current.errors.append(
            "Too many wrong passwords for this account or from your address; try again in "
            f"{refusal.retry_after} s ({refusal.retry_at})."
        )
    elif submitted:
        try:
            accounts.change_own_password(
                current_user, password_form.current.data or "", password_form.new.data or ""
            )
        except accounts.PasswordRefused as exc:
            password_form.new.errors.append(str(exc))
        except ServiceError as exc:
            throttle.failed(throttle.LOGIN, keys)  # the current password was wrong
            audit.password_wrong(current_user, _address())
            password_form.current.errors.append(str(exc))
        else:
            stay_logged_in(current_user)
            flash("Your password was changed; your other sessions were ended.", "success")
            return redirect(url_for("auth.account"))
    elif prefs_form.submit.data and prefs_form.validate_on_submit():
        accounts.set_preferences(
            current_user, shortcuts_enabled=bool(prefs_form.shortcuts_enabled.data)
        )
        flash("Preferences saved.", "success")
        return redirect(url_for("auth.account"))
    page = render_template(
        "auth/account.html",
        password_form=password_form,
        prefs_form=prefs_form,
        example=accounts.api_example(current_user),
        min_password=accounts.MIN_PASSWORD,
    )
    if refusal is None:
        return page
    response = make_response(page, 429)
    response.headers["Retry-After"] = str(refusal.retry_after)
    return response
