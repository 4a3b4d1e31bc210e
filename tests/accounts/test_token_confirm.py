"""Replacing or removing one's API token asks first: scripts sending the old one stop working."""

from __future__ import annotations

import re

from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import accounts


def _confirms(page: str, action: str) -> str | None:
    """The data-confirm question of the form posting to `action`, or None."""
    form = re.search(rf'<form method="post" action="{re.escape(action)}"[^>]*>', page)
    assert form is not None, action
    found = re.search(r'data-confirm="([^"]*)"', form.group(0))
    return found.group(1) if found else None


def test_a_first_token_is_made_at_once_and_a_replacement_asks(as_admin: FlaskClient) -> None:
    page = as_admin.get("/account").get_data(as_text=True)
    assert _confirms(page, "/account/api-token/") is None  # nothing to break yet
    assert as_admin.post("/account/api-token/").status_code in (200, 302)
    page = as_admin.get("/account").get_data(as_text=True)
    assert _confirms(page, "/account/api-token/") == (
        "Replace your API token? Scripts and CI jobs that send the current one are refused "
        "from now on, until they are given the new one."
    )
    assert _confirms(page, "/account/api-token/revoke") == (
        "Remove your API token? Scripts and CI jobs that send it are refused from now on."
    )


def test_revoking_someone_elses_token_asks(
    app: Flask, as_admin: FlaskClient, annotator_id: int
) -> None:
    with app.app_context():
        accounts.create_token(db.session.get_one(User, annotator_id))
        db.session.commit()
        name = db.session.get_one(User, annotator_id).username
    page = as_admin.get(f"/users/{annotator_id}").get_data(as_text=True)
    assert _confirms(page, f"/users/{annotator_id}/revoke-token") == (
        f"Revoke {name}'s API token? Their scripts and CI jobs that send it are refused "
        "from now on."
    )
