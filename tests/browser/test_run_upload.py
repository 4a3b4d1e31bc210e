"""Run upload in the browser: the script's error summary for a bad file, then a good upload."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run
from tests.browser.live import ADMIN_PASSWORD, LiveServer
from tests.factory import build_test_set


@pytest.mark.browser
def test_bad_run_shows_its_line_then_a_good_one_uploads(
    live_server: LiveServer, browser_page, tmp_path: Path
) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    with app.app_context():
        test_set_id = build_test_set("Uploads", {"q1": "leave", "q2": "pay"}, [("q1", "a", 2)]).id
        db.session.remove()
    page.goto(base + "/login")
    page.fill("#username", "admin")
    page.fill("#password", ADMIN_PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(base + "/")

    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 a 1 2.0 s\nq1 Q0 b 2 1.0 s\nq1 Q0 a 3 0.5 s\n")
    page.goto(f"{base}/test-sets/{test_set_id}/runs/upload")
    page.evaluate("window.__uploadMarker = 'same page'")
    page.set_input_files("#file", str(bad))
    page.fill("#name", "bm25")
    page.click("input[type=submit][value='Upload run']")
    summary = page.locator("#upload-errors .error-summary")
    summary.wait_for()
    assert "bad.trec:3: docid 'a' appears twice for query q1" in summary.inner_text()
    # The script showed the error in place: no navigation, and the button works again.
    assert page.evaluate("window.__uploadMarker") == "same page"
    assert page.locator("input[type=submit][value='Upload run']").is_enabled()
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == 0

    good = tmp_path / "bm25-v2.trec.gz"
    good.write_bytes(gzip.compress(b"q1 Q0 a 1 2.0 s\nq1 Q0 b 2 1.0 s\nzz Q0 a 1 1.0 s\n"))
    page.fill("#name", "")
    page.set_input_files("#file", str(good))
    # The name follows the chosen file until the user types one of their own.
    assert page.input_value("#name") == "bm25-v2"
    page.fill("#name", "bm25")
    page.set_input_files("#file", str(bad))
    assert page.input_value("#name") == "bm25"
    page.set_input_files("#file", str(good))
    page.click("input[type=submit][value='Upload run']")
    page.wait_for_url(re.compile(rf".*/test-sets/{test_set_id}/runs/\d+$"))
    text = page.locator("main").inner_text()
    assert "Run bm25 uploaded." in text
    assert "1 query of the file is not in this test set and was left out, e.g. zz." in text
    assert "The run has no ranking for 1 query of the test set" in text
    # The upload report's row labels stay on one line each (the sha256 breaks instead).
    lines_of = """h => { const r = document.createRange(); r.selectNodeContents(h);
        return new Set([...r.getClientRects()].map((rect) => Math.round(rect.top))).size; }"""
    headers = page.locator("section[aria-labelledby=upload-heading] th[scope=row]").all()
    assert len(headers) == 11  # with "Tags" and "Docids the corpus lacks"
    for header in headers:
        assert header.evaluate(lines_of) == 1, header.inner_text()
