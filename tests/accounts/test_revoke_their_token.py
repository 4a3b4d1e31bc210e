"""An admin revokes someone's leaked API token without deactivating them (page and CLI)."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, User
from ndcg_labeler.services import accounts


def _token(app: Flask, user_id: int) -> str:
    with app.app_context():
        return accounts.create_token(db.session.get_one(User, user_id))


def _api_status(client: FlaskClient, token: str) -> int:
    return client.get("/api/testsets", headers={"Authorization": f"Bearer {token}"}).status_code


def test_an_admin_revokes_a_persons_token_on_their_page(
    app: Flask, as_admin: FlaskClient, admin_id: int, annotator_id: int
) -> None:
    token = _token(app, annotator_id)
    assert _api_status(as_admin, token) == 200
    page = as_admin.get(f"/users/{annotator_id}").get_data(as_text=True)
    assert "ann has an API token, created " in page
    assert f'action="/users/{annotator_id}/revoke-token"' in page
    listing = as_admin.get("/users/").get_data(as_text=True)
    assert '<th scope="col">API token</th>' in listing
    response = as_admin.post(f"/users/{annotator_id}/revoke-token", follow_redirects=True)
    assert "ann’s API token was revoked: requests with it are refused from now on." in (
        response.get_data(as_text=True)
    )
    assert _api_status(as_admin, token) == 401
    with app.app_context():
        ann = db.session.get_one(User, annotator_id)
        assert ann.active and ann.api_token_hash is None  # still signs in and labels
        events = [(e.actor_name, e.action, e.target_id) for e in db.session.query(AuditEvent)]
    assert ("admin", "token.revoke", annotator_id) in events
    page = as_admin.get(f"/users/{annotator_id}").get_data(as_text=True)
    assert "ann has no API token." in page and "revoke-token" not in page
    again = as_admin.post(f"/users/{annotator_id}/revoke-token", follow_redirects=True)
    assert "ann has no API token: nothing to revoke." in again.get_data(as_text=True)


def test_the_cli_revokes_a_token_too(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, annotator_id: int
) -> None:
    token = _token(app, annotator_id)
    result = runner.invoke(args=["user", "edit", "ann", "--revoke-token"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "Saved ann: API token revoked."
    assert _api_status(client, token) == 401
    again = runner.invoke(args=["user", "edit", "ann", "--revoke-token"])
    assert again.output.strip() == "Saved ann: nothing changed (no API token to revoke)."


def test_the_edit_page_says_what_deactivating_does(
    as_admin: FlaskClient, annotator_id: int
) -> None:
    # The box is one click from ending sessions and a token; say so before Save, not after.
    page = as_admin.get(f"/users/{annotator_id}").get_data(as_text=True)
    assert (
        "Saving with Active unticked ends their sessions, revokes their API token and hands "
        "the pairs they hold back to the queue; their grades stay."
    ) in page
