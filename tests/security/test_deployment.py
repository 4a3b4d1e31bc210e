"""Deployment settings: Secure cookies (NDCG_SECURE_COOKIES) and ProxyFix (NDCG_PROXY_FIX)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask, request

from ndcg_labeler.extensions import db
from ndcg_labeler.factory import create_app
from tests.factory import PASSWORD, make_user

FORWARDED = {"X-Forwarded-For": "192.0.2.44", "X-Forwarded-Proto": "https"}


@pytest.fixture
def build(tmp_path: Path, sqlite_template: Path) -> Iterator:
    """Make apps as production would (no test overrides of the cookie settings)."""
    made: list[Flask] = []

    def make(**config: object) -> Flask:
        path = tmp_path / f"db{len(made)}.sqlite3"
        shutil.copy(sqlite_template, path)
        settings = {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}",
            "INSTANCE_PATH": str(tmp_path),
            "SECRET_KEY": "deployment-test",
            "NDCG_DEMO": False,
            "WTF_CSRF_ENABLED": False,
        }
        settings.update(config)
        app = create_app(settings)
        made.append(app)
        make_user(app, "admin", "admin")
        return app

    yield make
    for app in made:
        with app.app_context():
            db.engine.dispose()


def _login_cookies(app: Flask) -> list[str]:
    client = app.test_client()
    response = client.post(
        "/login",
        data={"username": "admin", "password": PASSWORD, "remember": "y"},
        base_url="https://ndcg.example",
    )
    assert response.status_code == 302
    return response.headers.getlist("Set-Cookie")


def _flags(cookies: list[str], name: str) -> set[str]:
    (line,) = [c for c in cookies if c.startswith(name + "=")]
    return {part.strip().split("=")[0].lower() for part in line.split(";")[1:]}


def test_cookies_are_secure_by_default(build, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NDCG_SECURE_COOKIES", raising=False)
    monkeypatch.delenv("FLASK_DEBUG", raising=False)
    app = build()
    cookies = _login_cookies(app)
    for name in ("session", "remember_token"):
        assert {"secure", "httponly", "samesite"} <= _flags(cookies, name), name


def test_secure_cookies_can_be_switched_off(build, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NDCG_SECURE_COOKIES", "0")  # what `make run` sets for http://127.0.0.1
    cookies = _login_cookies(build())
    for name in ("session", "remember_token"):
        flags = _flags(cookies, name)
        assert "secure" not in flags and "httponly" in flags, name


def test_debug_mode_defaults_to_plain_cookies(build, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NDCG_SECURE_COOKIES", raising=False)
    monkeypatch.setenv("FLASK_DEBUG", "1")
    app = build()
    assert app.debug
    assert "secure" not in _flags(_login_cookies(app), "session")


def _seen(app: Flask) -> list[tuple[str | None, str]]:
    seen: list[tuple[str | None, str]] = []

    @app.before_request
    def remember() -> None:
        seen.append((request.remote_addr, request.scheme))

    app.test_client().get("/login", headers=FORWARDED, environ_base={"REMOTE_ADDR": "10.0.0.2"})
    return seen


def test_forwarded_headers_are_ignored_without_proxy_fix(build) -> None:
    assert _seen(build()) == [("10.0.0.2", "http")]


def test_proxy_fix_follows_the_proxy_headers(build) -> None:
    assert _seen(build(NDCG_PROXY_FIX=1)) == [("192.0.2.44", "https")]


def test_proxy_fix_trusts_only_the_given_number_of_proxies(build) -> None:
    app = build(NDCG_PROXY_FIX=1)
    seen: list[str | None] = []

    @app.before_request
    def remember() -> None:
        seen.append(request.remote_addr)

    # A client-forged first entry: with one proxy only the entry nginx appended counts.
    headers = {"X-Forwarded-For": "6.6.6.6, 192.0.2.44"}
    app.test_client().get("/login", headers=headers, environ_base={"REMOTE_ADDR": "10.0.0.2"})
    assert seen == ["192.0.2.44"]


def test_login_throttle_counts_the_forwarded_address(build) -> None:
    """Behind a proxy, one client's failures do not lock out everybody else's address."""
    app = build(NDCG_PROXY_FIX=1)
    client = app.test_client()
    proxy = {"REMOTE_ADDR": "10.0.0.2"}
    for attempt in range(10):
        client.post(
            "/login",
            data={"username": f"x{attempt}", "password": "wrong-pass"},
            headers={"X-Forwarded-For": "192.0.2.44"},
            environ_base=proxy,
        )
    response = client.post(
        "/login",
        data={"username": "admin", "password": PASSWORD},
        headers={"X-Forwarded-For": "192.0.2.99"},
        environ_base=proxy,
    )
    assert response.status_code == 302


@pytest.mark.parametrize("path", ["/", "/login", "/static/css/app.css", "/no/such/page"])
def test_an_untrusted_host_gets_400_from_every_address(
    build, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    monkeypatch.setenv("NDCG_TRUSTED_HOSTS", "ndcg.example.org, .team.example")
    client = build().test_client()
    refused = client.get(path, headers={"Host": "attacker.example"})
    assert refused.status_code == 400
    assert b"attacker.example&#39; is not trusted" in refused.data
    assert refused.headers["X-Frame-Options"] == "DENY"
    api = client.get("/api/testsets", headers={"Host": "attacker.example"})
    assert api.status_code == 400
    assert api.get_json()["error"] == "Bad Request"
    for host in ("ndcg.example.org", "eu.team.example"):
        assert client.get("/login", headers={"Host": host}).status_code == 200


def test_every_host_is_trusted_when_none_is_set(build, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NDCG_TRUSTED_HOSTS", " , ")
    client = build().test_client()
    assert client.get("/login", headers={"Host": "anything.example"}).status_code == 200
