"""Forms that survive a lost session: on every POST route, signing out mid-form (in another tab,
or with the cookie gone) changes nothing, says what happened and keeps what was entered; scripts
get JSON they can show; after sign-in the entries can be sent again."""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from tests.factory import PASSWORD, make_app
from tests.security.test_authorization_matrix import API, PUBLIC, ROUTES, _extra, _routes
from tests.security.world import World, make_world

# What a person typed: kept, and shown back. The password is never echoed.
ENTRIES = {"name": "kept name ✓", "guidelines": "Grade <b>carefully</b>", "depth": "7"}
SECRET = "pw-hunter2-secret"


@pytest.fixture
def world(tmp_path: Path, sqlite_template: Path) -> Iterator[World]:
    path = tmp_path / "lost.sqlite3"
    shutil.copy(sqlite_template, path)
    app = make_app(tmp_path, f"sqlite:///{path}", WTF_CSRF_ENABLED=True)
    yield make_world(app)
    with app.app_context():
        db.engine.dispose()


def _token(client: FlaskClient, url: str = "/login") -> str:
    page = client.get(url).get_data(as_text=True)
    found = re.search(r'name="csrf_token" (?:type="hidden" )?value="([^"]+)"', page)
    assert found, url
    return found.group(1)


def _login(client: FlaskClient) -> str:
    token = _token(client)
    response = client.post(
        "/login", data={"username": "admin", "password": PASSWORD, "csrf_token": token}
    )
    assert response.status_code == 302
    return _token(client, "/account")


def _snapshot(app: Flask) -> str:
    """A digest of every row of every table: any write shows."""
    digest = hashlib.sha256()
    with app.app_context():
        for table in db.metadata.sorted_tables:
            for row in db.session.execute(sa.select(table).order_by(*table.primary_key.columns)):
                digest.update(repr(tuple(row)).encode())
        db.session.remove()
    return digest.hexdigest()


def _posts(app: Flask) -> list:
    return [
        rule
        for rule, method in _routes(app)
        if method == "POST"
        and ROUTES[rule.endpoint] not in (API, PUBLIC)
        and rule.endpoint != "auth.logout"
    ]


def _kept(body: str, password_sent: bool) -> None:
    """The page keeps the entries (visible and in the form that sends them) and no secret."""
    text = html.unescape(body)
    for value in ENTRIES.values():
        assert value in text
    assert SECRET not in text
    if password_sent:
        assert "Passwords are never kept" in text


def test_signed_out_in_another_tab_on_every_form(world: World, request) -> None:
    app = world.app
    client = app.test_client()
    token = _login(client)
    assert client.post("/logout", data={"csrf_token": token}).status_code == 302  # the other tab
    before = _snapshot(app)
    posts = _posts(app)
    for rule in posts:
        url = world.sets["A"].fill(rule, _extra(world))
        data = {**ENTRIES, "password": SECRET, "csrf_token": token}
        response = client.post(url, data=data)
        body = response.get_data(as_text=True)
        assert response.status_code == 401, f"POST {url}: {response.status_code}"
        assert "You were signed out in another tab. Nothing was saved" in body, url
        _kept(body, password_sent=True)
        fields = re.search(r'name="resume_fields" value="([^"]+)"', body).group(1)
        assert dict(json.loads(html.unescape(fields))) == ENTRIES
        scripted = client.post(url, data=data, headers={"X-Requested-With": "XMLHttpRequest"})
        assert scripted.status_code == 401 and scripted.json["signed_in"] is False
        assert scripted.json["message"] == (
            "You were signed out in another tab; sign in again and your upload will resume. "
            "Nothing was stored."
        )
    assert _snapshot(app) == before
    request.node.user_properties.append(
        ("security-summary", f"lost session: {len(posts)} POST forms keep their entries")
    )


def test_a_lost_cookie_on_every_form_is_no_bare_400(world: World) -> None:
    app = world.app
    stale = _login(app.test_client())  # a token from a session this browser no longer has
    before = _snapshot(app)
    for rule in _posts(app):
        client = app.test_client()  # no cookie at all
        url = world.sets["A"].fill(rule, _extra(world))
        response = client.post(url, data={**ENTRIES, "csrf_token": stale})
        body = response.get_data(as_text=True)
        assert response.status_code == 400, url
        assert "CSRF" not in body, url  # not the bare "The CSRF session token is missing."
        assert "Your session ended (its cookie is gone or no longer valid). Nothing was saved" in (
            body
        )
        _kept(body, password_sent=False)
        scripted = client.post(
            url, data={**ENTRIES, "csrf_token": stale}, headers={"HX-Request": "true"}
        )
        assert scripted.status_code == 403 and "sign in again" in scripted.json["message"]
    assert _snapshot(app) == before


def test_signed_in_again_the_settings_are_sent_after_a_confirmation(world: World) -> None:
    app = world.app
    client = app.test_client()
    token = _login(client)
    test_set_id = world.sets["A"].test_set_id
    url = f"/test-sets/{test_set_id}/settings"
    fields = {
        "name": "A",
        **{f"grades-{g}-name": f"grade {g}" for g in range(4)},
        "guidelines": "Read the whole chunk first.",
        "aggregation": "median",
        "relevance_threshold": "1",
        "judgments_per_pair": "1",
        "disagreement_threshold": "2",
        "csrf_token": token,
    }
    client.post("/logout", data={"csrf_token": token})
    lost = client.post(url, data=fields)
    assert lost.status_code == 401
    carried = re.search(r'name="resume_fields" value="([^"]+)"', lost.get_data(as_text=True))
    login_token = _token(client)
    wrong = client.post(
        f"/login?next={url}",
        data={
            "username": "admin",
            "password": "not-the-password",
            "csrf_token": login_token,
            "resume_path": url,
            "resume_fields": html.unescape(carried.group(1)),
        },
    )
    kept = wrong.get_data(as_text=True)  # a mistyped password loses nothing either
    assert "Unknown username or wrong password." in kept and 'id="resume-login"' in kept
    assert "Read the whole chunk first." in kept
    again = client.post(
        f"/login?next={url}",
        data={
            "username": "admin",
            "password": PASSWORD,
            "csrf_token": login_token,
            "resume_path": url,
            "resume_fields": html.unescape(carried.group(1)),
        },
    )
    page = again.get_data(as_text=True)
    assert again.status_code == 200 and "Send your form again?" in page
    assert "Read the whole chunk first." in page
    resend = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page))
    with app.app_context():
        assert db.session.get_one(TestSet, test_set_id).guidelines != "Read the whole chunk first."
    sent = client.post(url, data={k: html.unescape(v) for k, v in resend.items()})
    assert sent.status_code == 302
    with app.app_context():
        assert db.session.get_one(TestSet, test_set_id).guidelines == "Read the whole chunk first."
