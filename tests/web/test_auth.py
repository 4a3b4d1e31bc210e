"""Login, logout, password change, user admin and the global login gate."""

from __future__ import annotations

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from tests.factory import PASSWORD, make_user


def test_anonymous_is_sent_to_login(client: FlaskClient) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/login")


def test_login_page_and_static_are_public(client: FlaskClient) -> None:
    assert client.get("/login").status_code == 200
    response = client.get("/static/css/app.css")
    assert response.status_code == 200
    response.close()


def test_every_page_has_a_favicon_and_favicon_ico_is_not_a_404(client: FlaskClient) -> None:
    page = client.get("/login").get_data(as_text=True)
    assert '<link rel="icon" type="image/svg+xml" href="/static/favicon.svg">' in page
    for url in ("/static/favicon.svg", "/favicon.ico"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.mimetype == "image/svg+xml" and b"<svg" in response.data
        response.close()


def test_login_with_wrong_password_fails(client: FlaskClient, admin_id: int, auth) -> None:
    response = auth.login("admin", "wrong-password")
    assert response.status_code == 200
    assert b"wrong password" in response.data
    assert client.get("/").status_code == 302


def test_login_logout(client: FlaskClient, admin_id: int, auth) -> None:
    assert auth.login("admin").status_code == 302
    assert client.get("/").status_code == 200
    auth.logout()
    assert client.get("/").status_code == 302


def test_login_takes_the_name_in_any_case_and_without_surrounding_spaces(
    app: Flask, client: FlaskClient, auth
) -> None:
    """A phone capitalises the first letter; a password manager may add a space."""
    make_user(app, "Alice.Smith")
    for typed in ("alice.smith", " ALICE.SMITH ", "Alice.Smith"):
        assert auth.login(typed).status_code == 302, typed
        assert client.get("/").status_code == 200
        auth.logout()


def test_login_by_case_is_refused_when_two_accounts_differ_only_by_case(
    app: Flask, client: FlaskClient, auth
) -> None:
    """Accounts made before names were unique regardless of case: only the exact name signs in."""
    make_user(app, "bob")
    make_user(app, "Bob")
    assert auth.login("BOB").status_code == 200
    assert client.get("/").status_code == 302
    assert auth.login("Bob").status_code == 302


def test_login_ignores_offsite_next(client: FlaskClient, admin_id: int) -> None:
    response = client.post(
        "/login?next=//evil.example/x", data={"username": "admin", "password": PASSWORD}
    )
    assert response.headers["Location"] == "/"


def test_inactive_user_cannot_log_in(app: Flask, client: FlaskClient, annotator_id: int, auth):
    with app.app_context():
        db.session.get(User, annotator_id).active = False
        db.session.commit()
    assert auth.login("ann").status_code == 200
    assert client.get("/").status_code == 302


def test_change_own_password(app: Flask, as_annotator: FlaskClient, annotator_id: int) -> None:
    response = as_annotator.post(
        "/account",
        data={
            "pw-current": PASSWORD,
            "pw-new": "a-new-tulip-password",
            "pw-confirm": "a-new-tulip-password",
            "pw-submit": "1",
        },
    )
    assert response.status_code == 302
    with app.app_context():
        assert db.session.get(User, annotator_id).check_password("a-new-tulip-password")


def test_change_password_needs_current(app: Flask, as_annotator: FlaskClient, annotator_id: int):
    response = as_annotator.post(
        "/account",
        data={"pw-current": "nope", "pw-new": "x" * 10, "pw-confirm": "x" * 10, "pw-submit": "1"},
    )
    assert b"not your current password" in response.data
    with app.app_context():
        assert db.session.get(User, annotator_id).check_password(PASSWORD)


def test_users_page_is_admin_only(client: FlaskClient, as_annotator: FlaskClient) -> None:
    assert as_annotator.get("/users/").status_code == 403


def test_admin_creates_user(app: Flask, as_admin: FlaskClient) -> None:
    response = as_admin.post(
        "/users/", data={"username": "bob", "role": "annotator", "password": "bob-tulip-ember-7"}
    )
    assert response.status_code == 302
    with app.app_context():
        bob = db.session.scalar(sa.select(User).where(User.username == "bob"))
        assert (
            bob is not None and bob.role == "annotator" and bob.check_password("bob-tulip-ember-7")
        )
        assert bob.password_hash != "bob-tulip-ember-7"


def test_admin_cannot_demote_self(app: Flask, as_admin: FlaskClient, admin_id: int) -> None:
    response = as_admin.post(f"/users/{admin_id}", data={"role": "annotator", "active": "y"})
    assert response.status_code == 200
    with app.app_context():
        assert db.session.get(User, admin_id).role == "admin"


def test_security_headers(client: FlaskClient) -> None:
    response = client.get("/login")
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_session_cookie_flags(client: FlaskClient, admin_id: int, auth) -> None:
    response = auth.login("admin")
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
