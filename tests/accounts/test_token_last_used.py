"""When each API token was created and last used: on the Account page, the Users pages, the CLI.

An admin looking for tokens nobody uses any more (to revoke them) or for a token used after it
should have been retired needs both times. The use time is written at most once a minute per
token, so a busy script does not write on every request.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import accounts


def _aware(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def _times(app: Flask, user_id: int) -> tuple[datetime | None, datetime | None]:
    with app.app_context():
        user = db.session.get_one(User, user_id)
        return _aware(user.api_token_created_at), _aware(user.api_token_used_at)


def _call(client: FlaskClient, token: str) -> int:
    return client.get("/api/testsets", headers={"Authorization": f"Bearer {token}"}).status_code


def test_creation_and_use_are_recorded(app: Flask, client: FlaskClient, annotator_id: int) -> None:
    before = datetime.now(UTC) - timedelta(seconds=1)
    with app.app_context():
        token = accounts.create_token(db.session.get_one(User, annotator_id))
    created, used = _times(app, annotator_id)
    assert created is not None and created >= before and used is None
    assert _call(client, token) == 200
    created_again, used = _times(app, annotator_id)
    assert created_again == created and used is not None and used >= created
    # Within the minute a second call writes nothing.
    assert _call(client, token) == 200
    assert _times(app, annotator_id)[1] == used
    # A minute later it does.
    with app.app_context():
        user = db.session.get_one(User, annotator_id)
        user.api_token_used_at = used - timedelta(minutes=5)
        db.session.commit()
    assert _call(client, token) == 200
    assert _times(app, annotator_id)[1] > used - timedelta(minutes=5)
    # Revoked: both times go with the token.
    with app.app_context():
        accounts.revoke_token(db.session.get_one(User, annotator_id))
    assert _times(app, annotator_id) == (None, None)


def test_the_pages_show_them(app: Flask, as_admin: FlaskClient, annotator_id: int) -> None:
    with app.app_context():
        ann = db.session.get_one(User, annotator_id)
        accounts.create_token(ann)
        ann.api_token_created_at = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
        db.session.commit()
    edit = as_admin.get(f"/users/{annotator_id}").get_data(as_text=True)
    assert "ann has an API token, created 2026-03-01 09:30 UTC, never used." in edit
    listing = as_admin.get("/users/").get_data(as_text=True)
    assert "<td>yes, never used</td>" in listing
    with app.app_context():
        ann = db.session.get_one(User, annotator_id)
        ann.api_token_used_at = datetime(2026, 4, 2, 17, 5, tzinfo=UTC)
        db.session.commit()
    edit = as_admin.get(f"/users/{annotator_id}").get_data(as_text=True)
    assert "created 2026-03-01 09:30 UTC, last used 2026-04-02 17:05 UTC." in edit
    assert "<td>yes, last used 2026-04-02</td>" in as_admin.get("/users/").get_data(as_text=True)
    own = as_admin.post("/account/api-token/")  # the admin's own token
    assert own.status_code == 200
    account = as_admin.get("/account").get_data(as_text=True)
    assert "You have a token, created " in account and ", never used." in account


def test_the_cli_lists_them(app: Flask, runner: FlaskCliRunner, annotator_id: int) -> None:
    with app.app_context():
        ann = db.session.get_one(User, annotator_id)
        accounts.create_token(ann)
        ann.api_token_created_at = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
        ann.api_token_used_at = datetime(2026, 4, 2, 17, 5, tzinfo=UTC)
        db.session.commit()
    (row,) = json.loads(runner.invoke(args=["user", "list", "--json"]).output)
    assert row["api_token"] is True
    assert row["api_token_created_at"] == "2026-03-01T09:30:00Z"
    assert row["api_token_used_at"] == "2026-04-02T17:05:00Z"
    table = runner.invoke(args=["user", "list"]).output.splitlines()
    assert table[0].split() == ["username", "role", "active", "sign-in", "api-token", "created"]
    assert table[1].split()[4] == "used-2026-04-02"
