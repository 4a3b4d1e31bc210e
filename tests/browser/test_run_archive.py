"""Archiving a run from its page in the browser: the confirmation, then the run's new state."""

from __future__ import annotations

import io
import re

import pytest

from ndcg_labeler.extensions import db
from ndcg_labeler.services import runs as run_service
from tests.browser.live import LiveServer, log_in
from tests.factory import build_test_set, trec


@pytest.mark.browser
def test_archive_a_run_after_confirming(live_server: LiveServer, browser_page) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    deep = [f"d{n:02d}" for n in range(1, 15)] + ["a"]
    with app.app_context():
        test_set = build_test_set("Old runs", {"q1": "one"}, [("q1", "a", 1)])
        run = run_service.upload_run(
            test_set, io.BytesIO(trec({"q1": deep})), "old.trec", "old", None
        )
        url = f"{base}/test-sets/{test_set.id}/runs/{run.id}"
        db.session.remove()
    log_in(page, base)
    page.goto(url)
    page.fill("input[name=keep]", "10")
    # Dismissed: nothing happens. The question names the depth typed, not a placeholder.
    asked: list[str] = []

    def dismiss(dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.get_by_role("button", name="Archive this run").click()
    assert page.locator("#archived-notice").count() == 0
    assert asked == [
        "Archive the run old? Its entries past the top 10 of each query are deleted for good."
    ]
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Archive this run").click()
    page.wait_for_url(re.compile(r".*/runs/\d+$"))
    notice = page.locator("#archived-notice").inner_text()
    assert "keeps its top 10 entries per query" in notice
    text = page.locator("main").inner_text()
    assert "10 (top 10 per query)" in text
    # Had the dismissed click archived, this one would have been refused as already done.
    assert "Could not archive" not in page.content()
