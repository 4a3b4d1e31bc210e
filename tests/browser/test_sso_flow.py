"""Single sign-on in the browser: the button, the provider's round trip, and a signed-in page."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from tests.accounts.fake_oidc import CLIENT_ID, CLIENT_SECRET, FakeProvider
from tests.browser.live import LiveServer


@pytest.mark.browser
def test_sign_in_with_the_identity_provider(live_server: LiveServer, browser_page) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    with FakeProvider(claims={"preferred_username": "ada"}) as provider:
        app.config.update(
            NDCG_OIDC_ISSUER=provider.issuer,
            NDCG_OIDC_CLIENT_ID=CLIENT_ID,
            NDCG_OIDC_CLIENT_SECRET=CLIENT_SECRET,
            NDCG_OIDC_NAME="Test IdP",
            NDCG_OUTBOUND_ALLOW="127.0.0.1",
        )
        page.goto(base + "/account")  # not signed in: the login page, keeping where we were
        page.get_by_role("link", name="Sign in with Test IdP").click()
        page.wait_for_url(base + "/account")
        assert "ada" in page.locator("header").inner_text()
        assert provider.token_requests and provider.token_requests[0]["code_verifier"]
    with app.app_context():
        ada = db.session.scalar(sa.select(User).where(User.username == "ada"))
        assert ada is not None and ada.role == "annotator" and ada.oidc_subject == "user-123"
        db.session.remove()
