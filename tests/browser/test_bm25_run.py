"""A BM25 run from the runs page in the browser: a set with a corpus and no runs gets one."""

from __future__ import annotations

import re

import pytest

from ndcg_labeler.extensions import db
from tests.browser.live import LiveServer, log_in
from tests.factory import build_test_set
from tests.runs.test_bm25 import CORPUS, QUERIES


@pytest.mark.browser
def test_create_a_bm25_run_from_the_runs_page(live_server: LiveServer, browser_page) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    with app.app_context():
        test_set_id = build_test_set("Shop", QUERIES, corpus=CORPUS).id
        db.session.remove()
    log_in(page, base)
    page.goto(f"{base}/test-sets/{test_set_id}/runs/")
    # No runs yet: the form is open, with Anserini's defaults filled in.
    assert page.locator("details.bm25").get_attribute("open") is not None
    assert page.input_value("input[name=k1]") == "0.9"
    page.fill("input[name=depth]", "10")
    page.get_by_role("button", name="Create the BM25 run").click()
    page.wait_for_url(re.compile(rf".*/test-sets/{test_set_id}/runs/\d+$"))
    text = page.locator("main").inner_text()
    assert "k1=0.9, b=0.4, depth 10" in text and "3 chunks" in text
