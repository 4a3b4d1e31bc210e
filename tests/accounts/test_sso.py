"""Single sign-on with OpenID Connect against a fake provider on 127.0.0.1 (fake_oidc)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent, User
from tests.accounts.fake_oidc import CLIENT_ID, CLIENT_SECRET, MISCHIEF, FakeProvider
from tests.factory import PASSWORD, make_user


@pytest.fixture
def provider(app: Flask) -> Iterator[FakeProvider]:
    """A running fake provider, configured as the app's issuer (and allowed outbound)."""
    with FakeProvider() as fake:
        app.config.update(
            NDCG_OIDC_ISSUER=fake.issuer,
            NDCG_OIDC_CLIENT_ID=CLIENT_ID,
            NDCG_OIDC_CLIENT_SECRET=CLIENT_SECRET,
            NDCG_OIDC_NAME="Test IdP",
            NDCG_OUTBOUND_ALLOW="127.0.0.1",
        )
        yield fake


def sign_in(client: FlaskClient, next_url: str | None = None) -> httpx.Response | object:
    """Start at /login/sso, let the provider consent, and bring its answer back to the app."""
    start = client.get("/login/sso", query_string={"next": next_url} if next_url else None)
    assert start.status_code == 302, start.get_data(as_text=True)
    answer = httpx.get(start.headers["Location"], follow_redirects=False)
    assert answer.status_code == 302, answer.text
    back = urlsplit(answer.headers["location"])
    assert back.path == "/login/sso/callback"
    return client.get(f"{back.path}?{back.query}")


def people(app: Flask) -> list[User]:
    with app.app_context():
        return list(db.session.scalars(sa.select(User).where(User.oidc_subject.is_not(None))))


def test_the_login_page_offers_the_provider(client: FlaskClient, provider: FakeProvider) -> None:
    page = client.get("/login").get_data(as_text=True)
    assert "Sign in with Test IdP" in page
    assert 'name="password"' in page  # local passwords stay on by default


def test_first_sign_in_creates_an_annotator_and_the_next_finds_them(
    app: Flask, client: FlaskClient, provider: FakeProvider
) -> None:
    provider.claims = {"preferred_username": "ada", "email": "ada@example.org"}
    done = sign_in(client, "/account")
    assert done.status_code == 302 and done.headers["Location"] == "/account"
    assert "ada" in client.get("/account").get_data(as_text=True)
    [ada] = people(app)
    assert (ada.username, ada.role, ada.oidc_issuer, ada.oidc_subject) == (
        "ada", "annotator", provider.issuer, "user-123",
    )  # fmt: skip
    assert ada.password_hash is None
    # The request carried PKCE: the provider checked the verifier against the challenge.
    assert provider.token_requests[-1]["code_verifier"]
    client.post("/logout")
    provider.claims = {"preferred_username": "renamed"}  # names may change; the subject does not
    sign_in(client)
    assert [p.username for p in people(app)] == ["ada"]
    with app.app_context():
        actions = db.session.scalars(sa.select(AuditEvent.action)).all()
    assert actions.count("user.create") == 1


def test_a_taken_name_gets_a_suffix(
    app: Flask, client: FlaskClient, provider: FakeProvider
) -> None:
    make_user(app, "ada")
    provider.claims = {"preferred_username": "ada"}
    sign_in(client)
    assert [p.username for p in people(app)] == ["ada-2"]


def test_the_admin_claim_makes_an_admin(
    app: Flask, client: FlaskClient, provider: FakeProvider
) -> None:
    app.config.update(NDCG_OIDC_ADMIN_CLAIM="groups", NDCG_OIDC_ADMIN_VALUE="ndcg-admins")
    provider.claims = {"preferred_username": "grace", "groups": ["staff", "ndcg-admins"]}
    sign_in(client)
    assert [(p.username, p.role) for p in people(app)] == [("grace", "admin")]
    assert client.get("/users/").status_code == 200


def test_without_the_admin_value_nobody_becomes_admin(
    app: Flask, client: FlaskClient, provider: FakeProvider
) -> None:
    provider.claims = {"preferred_username": "grace", "groups": ["ndcg-admins"]}
    sign_in(client)
    assert [p.role for p in people(app)] == ["annotator"]


@pytest.mark.parametrize(
    ("mischief", "reason"),
    [
        ("wrong_issuer", "iss"),
        ("wrong_audience", "aud"),
        ("expired", "expired"),
        ("bad_signature", "bad_signature"),
        ("wrong_nonce", "nonce"),
    ],
)
def test_a_wrong_id_token_is_refused(
    app: Flask, client: FlaskClient, provider: FakeProvider, mischief: str, reason: str
) -> None:
    assert mischief in MISCHIEF
    provider.mischief = mischief
    done = sign_in(client)
    assert done.status_code == 302 and done.headers["Location"] == "/login"
    page = client.get("/login").get_data(as_text=True)
    assert "Single sign-on failed" in page and reason in page
    assert people(app) == []
    assert client.get("/account").status_code == 302  # not signed in


def test_a_forged_state_is_refused(app: Flask, client: FlaskClient, provider: FakeProvider) -> None:
    start = client.get("/login/sso")
    answer = httpx.get(start.headers["Location"], follow_redirects=False)
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    done = client.get("/login/sso/callback", query_string={"code": query["code"][0], "state": "x"})
    assert done.headers["Location"] == "/login"
    assert "(state)" in client.get("/login").get_data(as_text=True)
    assert people(app) == [] and provider.token_requests == []  # the code was never traded


def test_an_answer_without_a_started_sign_in_is_refused(
    client: FlaskClient, provider: FakeProvider
) -> None:
    done = client.get("/login/sso/callback", query_string={"code": "c", "state": "s"})
    assert done.headers["Location"] == "/login"
    assert "was not started here" in client.get("/login").get_data(as_text=True)


def test_the_fake_provider_checks_the_pkce_verifier(provider: FakeProvider) -> None:
    """The success above means the app sent the right verifier only if a wrong one fails."""
    authorize = httpx.get(
        f"{provider.issuer}/authorize",
        params={
            "client_id": CLIENT_ID, "response_type": "code", "scope": "openid",
            "redirect_uri": "http://localhost/cb", "state": "s",
            "code_challenge": "x" * 43, "code_challenge_method": "S256",
        },
    )  # fmt: skip
    code = parse_qs(urlsplit(authorize.headers["location"]).query)["code"][0]
    token = httpx.post(
        f"{provider.issuer}/token",
        data={"grant_type": "authorization_code", "code": code,
              "redirect_uri": "http://localhost/cb", "code_verifier": "wrong"},
        auth=(CLIENT_ID, CLIENT_SECRET),
    )  # fmt: skip
    assert token.status_code == 400 and token.json()["error_description"] == "PKCE"


def test_a_discovery_document_for_another_issuer_is_refused(
    app: Flask, client: FlaskClient
) -> None:
    with FakeProvider(discovery_issuer="https://idp.example.org") as fake:
        app.config.update(
            NDCG_OIDC_ISSUER=fake.issuer, NDCG_OIDC_CLIENT_ID=CLIENT_ID,
            NDCG_OUTBOUND_ALLOW="127.0.0.1",
        )  # fmt: skip
        start = client.get("/login/sso")
    assert start.headers["Location"] == "/login"
    page = client.get("/login").get_data(as_text=True)
    assert "unavailable" in page and "names issuer" in page


def test_the_outbound_policy_covers_the_provider(
    app: Flask, client: FlaskClient, provider: FakeProvider
) -> None:
    app.config.update(NDCG_OUTBOUND_ALLOW="", NDCG_OUTBOUND_DENY="127.0.0.0/8")
    start = client.get("/login/sso")
    assert start.headers["Location"] == "/login"
    page = client.get("/login").get_data(as_text=True)
    assert "Single sign-on is unavailable" in page and "NDCG_OUTBOUND_DENY" in page


def test_a_deactivated_person_cannot_sign_in(
    app: Flask, client: FlaskClient, provider: FakeProvider
) -> None:
    sign_in(client)
    client.post("/logout")
    with app.app_context():
        db.session.execute(sa.update(User).values(active=False))
        db.session.commit()
    done = sign_in(client)
    assert done.headers["Location"] == "/login"
    assert "deactivated" in client.get("/login").get_data(as_text=True)


def test_local_passwords_can_be_switched_off(
    app: Flask, client: FlaskClient, provider: FakeProvider
) -> None:
    make_user(app, "bob")
    app.config["NDCG_LOCAL_LOGIN"] = False
    page = client.get("/login").get_data(as_text=True)
    assert "Sign in with Test IdP" in page and 'name="password"' not in page
    refused = client.post("/login", data={"username": "bob", "password": PASSWORD})
    assert refused.status_code == 200
    assert "Passwords are switched off" in refused.get_data(as_text=True)
    assert client.get("/account").status_code == 302
    sign_in(client)
    assert client.get("/account").status_code == 200


def test_without_configuration_there_is_no_button(client: FlaskClient) -> None:
    assert "Sign in with" not in client.get("/login").get_data(as_text=True)
    assert client.get("/login/sso").status_code == 404
    assert client.get("/login/sso/callback", query_string={"code": "c"}).status_code == 404


@pytest.mark.parametrize(
    ("existing", "claims", "expected"),
    [
        # Taken in another letter case: a suffix, as for the same case.
        (["alice"], {"preferred_username": "Alice"}, "Alice-2"),
        (["ALICE", "alice-2"], {"preferred_username": "Alice"}, "Alice-3"),
        # The rule's characters are kept ('_' too); accents become their letters.
        ([], {"preferred_username": "ada_lovelace"}, "ada_lovelace"),
        ([], {"preferred_username": "José Núñez"}, "Jose-Nunez"),
        # A name with nothing usable falls through to the e-mail, then to the subject.
        ([], {"preferred_username": "山田", "email": "yamada@example.jp"}, "yamada@example.jp"),
        ([], {"preferred_username": "???"}, "sso-user-123"),
        # Never an import source's name, whatever the case.
        ([], {"preferred_username": "IMPORT:qrels"}, "IMPORT-qrels"),
        # Long names are cut to the rule's 80 characters, suffix included.
        (["a" * 80], {"preferred_username": "A" * 200}, "A" * 78 + "-2"),
    ],
)
def test_a_new_persons_name_follows_the_username_rule(
    app: Flask,
    client: FlaskClient,
    provider: FakeProvider,
    existing: list[str],
    claims: dict[str, str],
    expected: str,
) -> None:
    from ndcg_labeler.services import accounts

    for name in existing:
        make_user(app, name)
    provider.claims = claims
    sign_in(client)
    [person] = people(app)
    assert person.username == expected
    with app.app_context():
        assert accounts.check_username(person.username) == person.username
