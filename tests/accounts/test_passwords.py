"""Passwords: at least 10 characters and zxcvbn score 3, wherever a password is set."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import ServiceError, accounts
from tests.factory import PASSWORD

STRONG = "tulip-ember-quartz-91"
# Each with the reason its refusal must give.
WEAK = {
    "12345678": "at least 10 characters",
    "password": "at least 10 characters",
    "1234567890": "too easy to guess",
    "password12": "too easy to guess",
    "ndcg-labeler2026": "too easy to guess",
    "ann-ann-ann-ann": "too easy to guess",
}


def test_weak_passwords_are_refused_with_the_reason(ctx: Flask, record_property) -> None:
    for password, reason in WEAK.items():
        with pytest.raises(ServiceError, match=reason) as refused:
            accounts.create_user("ann", password)
        assert str(refused.value).endswith("."), password
    assert db.session.query(User).count() == 0
    assert accounts.create_user("ann", STRONG).check_password(STRONG)
    record_property(
        "security-summary",
        f"passwords refused: {len(WEAK)} weak ones ({', '.join(map(repr, WEAK))}), each with "
        f"its reason; a strong passphrase accepted",
    )


def test_the_refusal_says_why(ctx: Flask) -> None:
    with pytest.raises(ServiceError) as refused:
        accounts.create_user("ann", "password123")
    assert "common password" in str(refused.value)


def test_a_strong_passphrase_is_accepted_and_long_ones_too(ctx: Flask) -> None:
    assert accounts.create_user("ann", STRONG).check_password(STRONG)
    long_one = "correct horse battery staple " * 4
    assert accounts.create_user("bob", long_one).check_password(long_one)


def test_own_password_change_refuses_a_weak_one(ctx: Flask) -> None:
    ann = accounts.create_user("ann", PASSWORD)
    with pytest.raises(ServiceError, match="too easy to guess"):
        accounts.change_own_password(ann, PASSWORD, "ann-ann-ann-ann")


def test_the_account_page_shows_the_reason(as_annotator: FlaskClient, annotator_id: int) -> None:
    data = {"pw-current": PASSWORD, "pw-new": "password123", "pw-confirm": "password123"}
    response = as_annotator.post("/account", data={**data, "pw-submit": "y"})
    assert response.status_code == 200
    assert b"too easy to guess" in response.data


def test_the_admin_forms_refuse_a_weak_one(
    app: Flask, as_admin: FlaskClient, annotator_id: int
) -> None:
    created = as_admin.post(
        "/users/", data={"username": "bob", "role": "annotator", "password": "password123"}
    )
    assert b"too easy to guess" in created.data
    edited = as_admin.post(
        f"/users/{annotator_id}",
        data={"role": "annotator", "active": "y", "password": "qwertyuiop"},
    )
    assert b"too easy to guess" in edited.data
    with app.app_context():
        assert accounts.get_by_username("bob") is None
        assert db.session.get_one(User, annotator_id).check_password(PASSWORD)


def test_the_cli_refuses_a_weak_one(app: Flask, runner: FlaskCliRunner) -> None:
    result = runner.invoke(args=["user", "create", "eve"], input="password123\n")
    assert result.exit_code == 1
    assert "too easy to guess" in result.output


def test_a_weak_first_admin_password_is_refused_clearly(app: Flask, runner: FlaskCliRunner) -> None:
    app.config["NDCG_ADMIN_PASSWORD"] = "admin12345"
    result = runner.invoke(args=["bootstrap"])
    assert result.exit_code == 1
    assert "NDCG_ADMIN_PASSWORD is refused" in result.output
    assert "too easy to guess" in result.output


def test_generated_first_admin_passwords_pass(ctx: Flask) -> None:
    user, generated = accounts.ensure_first_admin(None)
    assert generated is not None and user.check_password(generated)


def test_the_app_stores_passwords_as_scrypt_hashes(ctx: Flask) -> None:
    user = User(username="hashed", role="annotator", active=True)
    user.set_password(STRONG)
    assert user.password_hash.startswith("scrypt:")
    assert STRONG not in user.password_hash
    assert user.check_password(STRONG)
    assert not user.check_password(STRONG + "x")


def test_the_users_page_hint_gives_the_rules_minimum(as_admin: FlaskClient) -> None:
    page = as_admin.get("/users/").get_data(as_text=True)
    assert f"At least {accounts.MIN_PASSWORD} characters" in page
    assert "At least 8 characters" not in page


def test_the_account_page_hint_gives_the_rules_minimum(as_annotator: FlaskClient) -> None:
    page = as_annotator.get("/account").get_data(as_text=True)
    assert "At least 10 characters" in page and "At least 8 characters" not in page


def test_a_weak_password_is_named_beside_the_password_field(
    as_admin: FlaskClient, annotator_id: int
) -> None:
    # Each form's error summary links the refusal to the field that holds the password, not
    # to the username, role or current-password field above it.
    weak = "Repeats like &#34;aaa&#34; are easy to guess"
    created = as_admin.post(
        "/users/", data={"username": "bob", "role": "annotator", "password": "aaaaaaaaaaaa"}
    ).get_data(as_text=True)
    assert '<a href="#password">Password: This password is too easy to guess.' in created
    assert weak in created and 'href="#username"' not in created
    edited = as_admin.post(
        f"/users/{annotator_id}",
        data={"role": "annotator", "active": "y", "password": "aaaaaaaaaaaa"},
    ).get_data(as_text=True)
    assert '<a href="#password">New password (leave empty to keep): This password is too' in edited
    assert 'href="#role"' not in edited
    data = {"pw-current": PASSWORD, "pw-new": "aaaaaaaaaaaa", "pw-confirm": "aaaaaaaaaaaa"}
    own = as_admin.post("/account", data={**data, "pw-submit": "y"}).get_data(as_text=True)
    assert '<a href="#pw-new">New password: This password is too easy to guess.' in own
    assert 'href="#pw-current"' not in own


def test_a_wrong_current_password_stays_beside_its_field(as_annotator: FlaskClient) -> None:
    data = {"pw-current": "not-it-at-all", "pw-new": STRONG, "pw-confirm": STRONG}
    page = as_annotator.post("/account", data={**data, "pw-submit": "y"}).get_data(as_text=True)
    assert '<a href="#pw-current">Current password: This is not your current password.' in page


def test_refusing_oneself_stays_beside_role_and_active(
    as_admin: FlaskClient, admin_id: int
) -> None:
    page = as_admin.post(f"/users/{admin_id}", data={"role": "admin"}).get_data(as_text=True)
    assert '<a href="#active">Active (may log in): You cannot remove your own admin' in page


def test_a_short_password_gets_the_same_words_on_every_form(
    as_admin: FlaskClient, annotator_id: int, runner: FlaskCliRunner
) -> None:
    # The pages said WTForms' "Field must be at least 10 characters long." where the command
    # line says the rule's own words.
    said = "The password must have at least 10 characters."
    cli = runner.invoke(args=["user", "create", "eve"], input="short\n")
    assert cli.output.strip() == f"Error: {said}"
    created = as_admin.post(
        "/users/", data={"username": "bob", "role": "annotator", "password": "short"}
    ).get_data(as_text=True)
    assert f'<a href="#password">Password: {said}</a>' in created
    edited = as_admin.post(
        f"/users/{annotator_id}", data={"role": "annotator", "active": "y", "password": "short"}
    ).get_data(as_text=True)
    assert f'<a href="#password">New password (leave empty to keep): {said}</a>' in edited
    data = {"pw-current": PASSWORD, "pw-new": "short", "pw-confirm": "short", "pw-submit": "y"}
    own = as_admin.post("/account", data=data).get_data(as_text=True)
    assert f'<a href="#pw-new">New password: {said}</a>' in own
