"""Password and token guessing is slowed: the 11th failure in a minute is refused with 429.

These tests run with the real default limits (NDCG_LOGIN_LIMIT and NDCG_API_AUTH_LIMIT, both
"10 per minute; 50 per hour"), which tests/factory.make_app leaves alone.
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path

import pytest
import redis
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.config import DEFAULT_FAILURE_LIMIT
from ndcg_labeler.extensions import db
from ndcg_labeler.services import accounts
from tests.factory import PASSWORD, make_app, make_user

ATTACKER = {"REMOTE_ADDR": "203.0.113.7"}
SOMEONE_ELSE = {"REMOTE_ADDR": "198.51.100.20"}


def _login(client: FlaskClient, username: str, password: str, environ: dict[str, str]):
    return client.post(
        "/login", data={"username": username, "password": password}, environ_base=environ
    )


def test_default_limit_is_ten_a_minute(app: Flask) -> None:
    assert DEFAULT_FAILURE_LIMIT == "10 per minute; 50 per hour"
    assert app.config["NDCG_LOGIN_LIMIT"] == DEFAULT_FAILURE_LIMIT
    assert app.config["NDCG_API_AUTH_LIMIT"] == DEFAULT_FAILURE_LIMIT


def test_eleventh_wrong_password_is_refused_even_when_right(
    app: Flask,
    client: FlaskClient,
    admin_id: int,
    caplog: pytest.LogCaptureFixture,
    record_property,
) -> None:
    for attempt in range(10):
        response = _login(client, "admin", f"guess-{attempt}", ATTACKER)
        assert response.status_code == 200, attempt
        assert b"wrong password" in response.data
    with caplog.at_level(logging.WARNING, logger=app.logger.name):
        response = _login(client, "admin", PASSWORD, ATTACKER)
    assert response.status_code == 429
    assert b"Too many failed logins" in response.data
    assert b"Try again in" in response.data
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    assert client.get("/").status_code == 302  # not logged in
    assert any("throttled login attempt" in r.getMessage() for r in caplog.records)
    record_property(
        "security-summary",
        f"login throttling ({app.config['SQLALCHEMY_DATABASE_URI'].split(':')[0]}): "
        "10 wrong passwords answered, the 11th try (the right password) refused with 429, "
        "Retry-After and a log line",
    )


def test_locked_account_from_another_address_is_refused_too(
    client: FlaskClient, admin_id: int
) -> None:
    for attempt in range(10):
        _login(client, "admin", f"guess-{attempt}", ATTACKER)
    # The account's own counter: a guesser cannot dodge it by changing address.
    assert _login(client, "admin", PASSWORD, SOMEONE_ELSE).status_code == 429


def test_other_account_from_other_address_is_not_affected(
    app: Flask, admin_id: int, annotator_id: int
) -> None:
    attacker, colleague = app.test_client(), app.test_client()
    for attempt in range(12):
        _login(attacker, "admin", f"guess-{attempt}", ATTACKER)
    response = _login(colleague, "ann", PASSWORD, SOMEONE_ELSE)
    assert response.status_code == 302
    assert colleague.get("/", environ_base=SOMEONE_ELSE).status_code == 200


def test_address_is_limited_across_accounts(app: Flask, client: FlaskClient) -> None:
    make_user(app, "victim")
    for attempt in range(10):  # ten different (mostly unknown) names from one address
        assert _login(client, f"nobody{attempt}", "x" * 9, ATTACKER).status_code == 200
    # The address has used its failures: even a right password for a fresh account waits.
    assert _login(client, "victim", PASSWORD, ATTACKER).status_code == 429
    assert _login(client, "victim", PASSWORD, SOMEONE_ELSE).status_code == 302


def test_successful_logins_are_not_counted(app: Flask, client: FlaskClient, admin_id: int) -> None:
    for _ in range(15):
        assert _login(client, "admin", PASSWORD, ATTACKER).status_code == 302
        client.post("/logout", environ_base=ATTACKER)
    assert _login(client, "admin", "wrong-one", ATTACKER).status_code == 200


def _token(app: Flask, user_id: int) -> str:
    from ndcg_labeler.models import User

    with app.app_context():
        return accounts.create_token(db.session.get_one(User, user_id))


def test_eleventh_bad_token_is_refused_even_when_valid(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    from ndcg_labeler.models import User

    token = _token(app, admin_id)
    gone = make_user(app, "gone")
    revoked = _token(app, gone)
    with app.app_context():
        accounts.revoke_token(db.session.get_one(User, gone))
    url = "/api/testsets/1/runs"
    bad = [f"ndcg_{uuid.uuid4().hex}" for _ in range(9)] + [revoked]
    for value in bad:
        response = client.get(
            url, headers={"Authorization": f"Bearer {value}"}, environ_base=ATTACKER
        )
        assert response.status_code == 401
    response = client.get(url, headers={"Authorization": f"Bearer {token}"}, environ_base=ATTACKER)
    assert response.status_code == 429
    assert response.get_json()["error"] == "Too Many Requests"
    assert "try again in" in response.get_json()["detail"]
    assert int(response.headers["Retry-After"]) >= 1
    # Another address with the valid token is not affected (404: there is no test set 1).
    response = client.get(
        url, headers={"Authorization": f"Bearer {token}"}, environ_base=SOMEONE_ELSE
    )
    assert response.status_code == 404


def test_missing_token_is_not_counted(app: Flask, client: FlaskClient, admin_id: int) -> None:
    token = _token(app, admin_id)
    for _ in range(12):
        assert client.get("/api/testsets/1/runs", environ_base=ATTACKER).status_code == 401
    response = client.get(
        "/api/testsets/1/runs", headers={"Authorization": f"Bearer {token}"}, environ_base=ATTACKER
    )
    assert response.status_code == 404


def test_limits_come_from_the_settings(tmp_path: Path, sqlite_template: Path) -> None:
    import shutil

    path = tmp_path / "db.sqlite3"
    shutil.copy(sqlite_template, path)
    app = make_app(tmp_path, f"sqlite:///{path}", NDCG_LOGIN_LIMIT="2 per minute")
    make_user(app, "admin", "admin")
    client = app.test_client()
    assert _login(client, "admin", "nope-1", ATTACKER).status_code == 200
    assert _login(client, "admin", "nope-2", ATTACKER).status_code == 200
    assert _login(client, "admin", PASSWORD, ATTACKER).status_code == 429
    with app.app_context():
        db.engine.dispose()


REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def test_counts_live_in_redis_and_are_shared(tmp_path: Path, sqlite_template: Path) -> None:
    """Two app processes on one Redis share the counters (a unique prefix, cleaned up)."""
    import shutil

    server = redis.Redis.from_url(REDIS_URL)
    try:
        server.ping()
    except redis.ConnectionError:
        pytest.skip(f"no Redis at {REDIS_URL} (set TEST_REDIS_URL)")
    prefix = f"ndcg-test-{uuid.uuid4().hex}"
    path = tmp_path / "db.sqlite3"
    shutil.copy(sqlite_template, path)
    settings = {"NDCG_REDIS_URL": REDIS_URL, "NDCG_THROTTLE_PREFIX": prefix}
    first = make_app(tmp_path, f"sqlite:///{path}", **settings)
    second = make_app(tmp_path, f"sqlite:///{path}", **settings)
    make_user(first, "admin", "admin")
    try:
        for attempt in range(10):
            assert _login(first.test_client(), "admin", f"g{attempt}", ATTACKER).status_code == 200
        keys = list(server.scan_iter(match=f"*{prefix}*"))
        assert keys, "the counters should be in Redis"
        # The other process refuses too: the counts are not per process.
        assert _login(second.test_client(), "admin", PASSWORD, ATTACKER).status_code == 429
    finally:
        for key in server.scan_iter(match=f"*{prefix}*"):
            server.delete(key)
        server.close()
        for app in (first, second):
            with app.app_context():
                db.engine.dispose()
    assert not list(redis.Redis.from_url(REDIS_URL).scan_iter(match=f"*{prefix}*"))


def test_unreachable_redis_does_not_lock_anyone_out(
    tmp_path: Path, sqlite_template: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import shutil

    path = tmp_path / "db.sqlite3"
    shutil.copy(sqlite_template, path)
    app = make_app(tmp_path, f"sqlite:///{path}", NDCG_REDIS_URL="redis://127.0.0.1:1/0")
    make_user(app, "admin", "admin")
    client = app.test_client()
    with caplog.at_level(logging.ERROR, logger=app.logger.name):
        assert _login(client, "admin", "wrong-pass", ATTACKER).status_code == 200
        assert _login(client, "admin", PASSWORD, ATTACKER).status_code == 302
    assert any("throttle storage unavailable" in r.getMessage() for r in caplog.records)
    with app.app_context():
        db.engine.dispose()


def test_guessing_the_current_password_on_the_account_page_is_slowed(
    app: Flask, as_annotator: FlaskClient, annotator_id: int
) -> None:
    # Someone with a taken-over session could try current passwords there without end, then
    # change it and lock the owner out; the same counter as the login's stops them.
    new = "tulip-ember-quartz-91"
    for attempt in range(10):
        data = {"pw-current": f"guess-{attempt}", "pw-new": new, "pw-confirm": new}
        response = as_annotator.post("/account", data={**data, "pw-submit": "y"})
        assert response.status_code == 200, attempt
        assert b"This is not your current password." in response.data
    data = {"pw-current": PASSWORD, "pw-new": new, "pw-confirm": new, "pw-submit": "y"}
    response = as_annotator.post("/account", data=data)
    assert response.status_code == 429
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    page = response.get_data(as_text=True)
    assert '<a href="#pw-current">Current password: Too many wrong passwords for this account' in (
        page
    )
    assert "try again in " in page
    with app.app_context():
        ann = accounts.get_by_username("ann")
        assert ann is not None and ann.check_password(PASSWORD)  # unchanged
