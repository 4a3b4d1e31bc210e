"""Sessions end: a password, role or activity change stops every old cookie of that person.

Each case logs `ann` in with "Keep me signed in" on one client, makes the change from another
(her own second browser or an admin), then tries the first client's session cookie and, on a
fresh client, the remember-me cookie alone: both must be sent to the login page.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler import config
from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import accounts
from tests.factory import PASSWORD, make_user

NEW_PASSWORD = "tulip-ember-quartz-91"
REMEMBER = "remember_token"


def _logged_in(app: Flask, username: str = "ann", password: str = PASSWORD) -> FlaskClient:
    client = app.test_client()
    response = client.post(
        "/login", data={"username": username, "password": password, "remember": "y"}
    )
    assert response.status_code == 302
    return client


def _remembered_only(app: Flask, cookie: str) -> FlaskClient:
    """A new browser that has only the remember-me cookie (its session cookie expired)."""
    client = app.test_client()
    client.set_cookie(REMEMBER, cookie)
    return client


def _opens_account(client: FlaskClient) -> bool:
    return client.get("/account").status_code == 200


def _own_password(app: Flask, name: str, user_id: int, admin: FlaskClient) -> FlaskClient:
    other = _logged_in(app, name)
    response = other.post(
        "/account",
        data={
            "pw-current": PASSWORD,
            "pw-new": NEW_PASSWORD,
            "pw-confirm": NEW_PASSWORD,
            "pw-submit": "y",
        },
    )
    assert response.status_code == 302
    return other


def _admin_password(app: Flask, name: str, user_id: int, admin: FlaskClient) -> FlaskClient:
    data = {"role": "annotator", "active": "y", "password": NEW_PASSWORD}
    assert admin.post(f"/users/{user_id}", data=data).status_code == 302
    return admin


def _role(app: Flask, name: str, user_id: int, admin: FlaskClient) -> FlaskClient:
    data = {"role": "admin", "active": "y"}
    assert admin.post(f"/users/{user_id}", data=data).status_code == 302
    return admin


def _deactivate(app: Flask, name: str, user_id: int, admin: FlaskClient) -> FlaskClient:
    assert admin.post(f"/users/{user_id}", data={"role": "annotator"}).status_code == 302
    return admin


def _deactivate_and_reactivate(
    app: Flask, name: str, user_id: int, admin: FlaskClient
) -> FlaskClient:
    _deactivate(app, name, user_id, admin)
    data = {"role": "annotator", "active": "y"}
    assert admin.post(f"/users/{user_id}", data=data).status_code == 302
    return admin


CHANGES: dict[str, Callable[[Flask, str, int, FlaskClient], FlaskClient]] = {
    "own password change in another browser": _own_password,
    "password set by an admin": _admin_password,
    "role change": _role,
    "deactivation": _deactivate,
    "deactivation then reactivation": _deactivate_and_reactivate,
}


def test_every_change_ends_old_session_and_remember_cookies(
    app: Flask, admin_id: int, record_property
) -> None:
    admin = _logged_in(app, "admin")
    for case, (change, make_change) in enumerate(CHANGES.items()):
        name = f"ann{case}"
        user_id = make_user(app, name)
        old = _logged_in(app, name)
        remember = old.get_cookie(REMEMBER)
        assert remember is not None
        assert _opens_account(old), change
        assert _opens_account(_remembered_only(app, remember.value)), change

        make_change(app, name, user_id, admin)

        assert not _opens_account(old), change
        assert not _opens_account(_remembered_only(app, remember.value)), change
    backend = app.config["SQLALCHEMY_DATABASE_URI"].split(":")[0]
    record_property(
        "security-summary",
        f"sessions ended ({backend}): {len(CHANGES)} cases ({', '.join(CHANGES)}), each "
        "refusing the old session cookie and the remember-me cookie",
    )


def test_the_browser_that_changed_its_password_stays_logged_in(
    app: Flask, annotator_id: int
) -> None:
    changer = _own_password(app, "ann", annotator_id, app.test_client())
    assert _opens_account(changer)
    fresh = changer.get_cookie(REMEMBER)
    assert fresh is not None
    assert _opens_account(_remembered_only(app, fresh.value))
    assert _logged_in(app, password=NEW_PASSWORD) is not None


def test_an_admin_who_changes_their_own_password_stays_logged_in(app: Flask, admin_id: int) -> None:
    admin = _logged_in(app, "admin")
    other = _logged_in(app, "admin")
    data = {"role": "admin", "active": "y", "password": NEW_PASSWORD}
    assert admin.post(f"/users/{admin_id}", data=data).status_code == 302
    assert _opens_account(admin)
    assert not _opens_account(other)


def test_a_cookie_from_before_session_tokens_loads_nobody(app: Flask, annotator_id: int) -> None:
    """Cookies that name only the user id (issued before 0012) are refused."""
    client = app.test_client()
    with client.session_transaction() as session:
        session["_user_id"] = str(annotator_id)
        session["_fresh"] = True
    assert not _opens_account(client)


def _api_status(client: FlaskClient, token: str) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    return client.get("/api/testsets/none/runs", headers=headers).status_code


def test_a_deactivated_users_token_stays_revoked_after_reactivation(
    app: Flask, admin_id: int, annotator_id: int
) -> None:
    with app.app_context():
        token = accounts.create_token(db.session.get_one(User, annotator_id))
    client = app.test_client()
    assert _api_status(client, token) == 404  # accepted: there is no such test set
    _deactivate_and_reactivate(app, "ann", annotator_id, _logged_in(app, "admin"))
    assert _api_status(client, token) == 401
    with app.app_context():
        assert db.session.get_one(User, annotator_id).api_token_hash is None


def test_remember_me_lasts_thirty_days(app: Flask, annotator_id: int, record_property) -> None:
    assert config.REMEMBER_DAYS == 30
    assert app.config["REMEMBER_COOKIE_DURATION"] == timedelta(days=30)
    client = app.test_client()
    response = client.post(
        "/login", data={"username": "ann", "password": PASSWORD, "remember": "y"}
    )
    (header,) = [h for h in response.headers.getlist("Set-Cookie") if h.startswith(REMEMBER)]
    expires = header.split("Expires=")[1].split(";")[0]
    left = datetime.strptime(expires, "%a, %d %b %Y %H:%M:%S GMT").replace(tzinfo=UTC)
    days = (left - datetime.now(UTC)).total_seconds() / 86400
    assert 29.9 < days <= 30
    record_property("security-summary", f"remember-me cookie: expires in {days:.1f} days")


def test_remember_days_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("NDCG_REMEMBER_DAYS", "7")
    monkeypatch.setenv("NDCG_SECRET_KEY", "x")
    assert config.from_environment(str(tmp_path))["REMEMBER_COOKIE_DURATION"] == timedelta(days=7)


def test_users_made_outside_the_service_get_a_token(app: Flask) -> None:
    user_id = make_user(app, "plain")
    with app.app_context():
        assert len(db.session.get_one(User, user_id).session_token) >= 32
