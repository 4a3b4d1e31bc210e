"""Sign-ins and sign-outs in the audit trail: password logins, failed ones (the name tried,
never the password; no more than the login limits let through), logouts and SSO logins."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler import throttle
from ndcg_labeler.extensions import db
from tests.accounts.fake_oidc import CLIENT_ID, CLIENT_SECRET, FakeProvider
from tests.accounts.test_sso import sign_in
from tests.audit.test_audit_actions import SIGNING, events
from tests.factory import PASSWORD


def _signing(app: Flask) -> list[tuple[str, str, int | None, tuple, dict]]:
    """(action, actor, actor id, target, details) of the sign-in events, oldest first."""
    return [
        (e["action"], e["actor"], e["actor_id"], e["target"], e["details"])
        for e in events(app, signing=True)
        if e["action"] in SIGNING
    ]


def test_a_password_login_and_logout(app: Flask, client: FlaskClient, admin_id: int) -> None:
    response = client.post("/login", data={"username": "admin", "password": PASSWORD})
    assert response.status_code == 302
    assert client.post("/logout").status_code == 302
    assert _signing(app) == [
        (
            "login.password",
            "admin",
            admin_id,
            ("user", admin_id),
            {"username": "admin", "address": "127.0.0.1"},
        ),
        ("logout", "admin", admin_id, ("user", admin_id), {"username": "admin"}),
    ]


def test_failed_logins_name_what_was_tried_never_the_password(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    client.post("/login", data={"username": " admin ", "password": "not-the-password-1"})
    client.post("/login", data={"username": "nobody", "password": "not-the-password-2"})
    assert _signing(app) == [
        (
            "login.failed",
            "(anonymous)",
            None,
            ("user", None),
            {"username": "admin", "address": "127.0.0.1"},
        ),
        (
            "login.failed",
            "(anonymous)",
            None,
            ("user", None),
            {"username": "nobody", "address": "127.0.0.1"},
        ),
    ]
    assert "not-the-password" not in str(events(app, signing=True))


def test_a_brute_force_leaves_no_more_events_than_the_limit_lets_through(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    app.config["NDCG_LOGIN_LIMIT"] = "3 per minute"
    throttle.init_app(app)
    codes = [
        client.post("/login", data={"username": "admin", "password": f"guess-{n}"}).status_code
        for n in range(10)
    ]
    assert codes == [200] * 3 + [429] * 7
    assert [e[0] for e in _signing(app)] == ["login.failed"] * 3


def test_the_audit_filter_page_and_export_know_the_new_actions(
    app: Flask, client: FlaskClient, admin_id: int, runner: FlaskCliRunner
) -> None:
    client.post("/login", data={"username": "admin", "password": "wrong-password-here"})
    client.post("/login", data={"username": "admin", "password": PASSWORD})
    page = client.get("/audit/?action=login.failed").get_data(as_text=True)
    for action in SIGNING:
        assert f'value="{action}"' in page
    data = client.get("/audit/audit.json?action=login.failed").get_json()
    assert [(row["action"], row["actor"]) for row in data] == [("login.failed", "(anonymous)")]
    done = runner.invoke(args=["audit", "export", "--json", "--action", "login.password"])
    assert done.exit_code == 0, done.output
    assert '"action": "login.password"' in done.output and "login.failed" not in done.output


@pytest.mark.parametrize("app", ["sqlite"], indirect=True)
def test_a_login_under_sqlites_held_lock_is_not_held_up(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    """A long import holds the write lock: the login goes through at once, the event is
    skipped (and logged), rather than the login waiting 10 s and failing."""
    with app.app_context():
        locker = db.engine.connect()
        locker.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            began = time.monotonic()
            response = client.post("/login", data={"username": "admin", "password": PASSWORD})
            took = time.monotonic() - began
        finally:
            locker.rollback()
            locker.close()
    assert response.status_code == 302
    assert took < 3, took
    assert _signing(app) == []


@pytest.fixture
def provider(app: Flask) -> Iterator[FakeProvider]:
    """A running fake identity provider, configured as the app's issuer."""
    with FakeProvider() as fake:
        app.config.update(
            NDCG_OIDC_ISSUER=fake.issuer,
            NDCG_OIDC_CLIENT_ID=CLIENT_ID,
            NDCG_OIDC_CLIENT_SECRET=CLIENT_SECRET,
            NDCG_OIDC_NAME="Test IdP",
            NDCG_OUTBOUND_ALLOW="127.0.0.1",
        )
        yield fake


def test_an_sso_login(app: Flask, client: FlaskClient, provider: FakeProvider) -> None:
    provider.claims = {"preferred_username": "ada"}
    assert sign_in(client).status_code == 302
    [(action, actor, actor_id, target, details)] = _signing(app)
    assert (action, actor, target) == ("login.sso", "ada", ("user", actor_id))
    assert details == {"username": "ada", "address": "127.0.0.1"}
    # The account's creation is its own event, before the sign-in.
    assert [e["action"] for e in events(app, signing=True)] == ["user.create", "login.sso"]
