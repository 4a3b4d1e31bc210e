"""Forms that survive a lost session, in the browser: an upload signed out in another tab keeps
its file and resumes after sign-in; a settings edit is kept and sent after a confirmation, with
the cookie gone too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet
from tests.browser.live import ADMIN_PASSWORD as PASSWORD
from tests.browser.live import LiveServer, log_in
from tests.factory import build_test_set


def _set(live_server: LiveServer) -> int:
    with live_server.app.app_context():
        test_set_id = build_test_set("Lost", {"q1": "leave", "q2": "pay"}, [("q1", "a", 2)]).id
        db.session.remove()
    return test_set_id


def _sign_out_elsewhere(page, base: str) -> None:
    """Another tab of the same browser logs out."""
    other = page.context.new_page()
    other.goto(base + "/")
    other.click("form[data-logout] button")
    other.wait_for_url(re.compile(r".*/login$"))
    other.close()


@pytest.mark.browser
def test_an_upload_signed_out_in_another_tab_resumes_after_sign_in(
    live_server: LiveServer, browser_page, tmp_path: Path
) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    test_set_id = _set(live_server)
    run = tmp_path / "bm25.trec"
    run.write_text("q1 Q0 a 1 2.0 s\nq1 Q0 b 2 1.0 s\n")
    log_in(page, base)
    page.goto(f"{base}/test-sets/{test_set_id}/runs/upload")
    page.set_input_files("#file", str(run))
    page.fill("#name", "bm25")
    _sign_out_elsewhere(page, base)
    page.click("input[type=submit][value='Upload run']")
    summary = page.locator("#upload-errors .error-summary")
    summary.wait_for()
    assert (
        "You were signed out in another tab; sign in again and your upload will resume. "
        "Nothing was stored."
    ) in summary.inner_text()
    assert page.evaluate("document.querySelector('#file').files.length") == 1
    assert page.input_value("#name") == "bm25"
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == 0
    with page.context.expect_page() as opened:
        page.click("#upload-sign-in")
    login = opened.value
    login.wait_for_load_state()
    login.fill("#username", "admin")
    login.fill("#password", PASSWORD)
    login.click("button[type=submit], input[type=submit]")
    login.wait_for_url(re.compile(r".*/session/signed-in$"))
    assert "Go back to the tab" in login.locator("#signed-in-message").inner_text()
    login.close()
    page.bring_to_front()
    # The first tab notices the new session and sends the same file again, on its own.
    page.wait_for_url(re.compile(rf".*/test-sets/{test_set_id}/runs/\d+$"), timeout=20_000)
    assert "Run bm25 uploaded." in page.locator("main").inner_text()
    with app.app_context():
        assert db.session.scalars(sa.select(Run.name)).all() == ["bm25"]


def _edit_settings(page, base: str, test_set_id: int, guidelines: str) -> None:
    page.goto(f"{base}/test-sets/{test_set_id}/settings")
    page.fill("#guidelines", guidelines)


def _guidelines(live_server: LiveServer, test_set_id: int) -> str:
    with live_server.app.app_context():
        found = db.session.get_one(TestSet, test_set_id).guidelines
        db.session.remove()
    return found


def _sign_in_and_send(page) -> None:
    """On the keeping page: sign in, check the entries, send them again."""
    page.fill("#resume-login #username", "admin")
    page.fill("#resume-login #password", PASSWORD)
    page.click("#resume-login button[type=submit]")
    page.wait_for_selector("#resume-form")
    assert page.locator("h1").inner_text() == "Send your form again?"
    page.click("#resume-form button[type=submit]")


@pytest.mark.browser
def test_a_settings_edit_survives_a_sign_out_and_a_lost_cookie(
    live_server: LiveServer, browser_page
) -> None:
    page, base = browser_page, live_server.url
    test_set_id = _set(live_server)
    log_in(page, base)

    # Signed out in another tab: the edit is kept, said so, and sent after a confirmation.
    _edit_settings(page, base, test_set_id, "Read the whole chunk first.")
    _sign_out_elsewhere(page, base)
    page.click("input[type=submit][value='Save settings']")
    message = page.locator("#resume-message").inner_text()
    assert message.startswith("You were signed out in another tab. Nothing was saved")
    assert "Read the whole chunk first." in page.locator("#resume-fields").inner_text()
    assert _guidelines(live_server, test_set_id) == ""
    _sign_in_and_send(page)
    page.wait_for_url(re.compile(rf".*/test-sets/{test_set_id}$"))
    assert _guidelines(live_server, test_set_id) == "Read the whole chunk first."

    # The cookie gone (no CSRF session token): no bare 400, the edit kept the same way.
    _edit_settings(page, base, test_set_id, "Ask when unsure.")
    page.context.clear_cookies()
    page.click("input[type=submit][value='Save settings']")
    message = page.locator("#resume-message").inner_text()
    assert message.startswith("Your session ended (its cookie is gone or no longer valid).")
    assert "CSRF" not in page.locator("main").inner_text()
    assert _guidelines(live_server, test_set_id) == "Read the whole chunk first."
    _sign_in_and_send(page)
    page.wait_for_url(re.compile(rf".*/test-sets/{test_set_id}$"))
    assert _guidelines(live_server, test_set_id) == "Ask when unsure."
