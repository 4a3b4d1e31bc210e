"""A gullibility probe in the browser: the button on the calibration page starts a job, its
page shows the verdict, and the calibration page shows the last probe beside kappa."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from ndcg_labeler.extensions import db
from ndcg_labeler.services import judges
from ndcg_labeler.services.jobs.runner import run_job
from tests.browser.a11y import AXE, check_page
from tests.browser.live import LiveServer, log_in
from tests.factory import build_test_set
from tests.judges.fake_probes import GullibleLLM

CORPUS = {"d1": "office opening hours", "d2": "a poem about autumn", "d3": "refunds in 30 days"}
QRELS = [("q1", "d1", 0), ("q1", "d2", 0), ("q1", "d3", 3)]


@pytest.fixture
def llm() -> Iterator[GullibleLLM]:
    server = GullibleLLM().start()
    yield server
    server.stop()


@pytest.mark.browser
def test_probe_button_and_result(live_server: LiveServer, browser_page, llm: GullibleLLM) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    with app.app_context():
        test_set = build_test_set("Probed", {"q1": "refund policy"}, QRELS, CORPUS)
        judge = judges.add_judge("gpt", llm.url, "fake-model", timeout=2)
        test_set_id, judge_id = test_set.id, judge.id
        db.session.remove()
    page.context.add_init_script(path=str(AXE))  # for the axe check at the end
    log_in(page, base)
    page.goto(f"{base}/test-sets/{test_set_id}/judges/{judge_id}")
    assert page.locator("#probe-verdict").inner_text() == "No probe yet."
    page.fill("#probe-pairs", "2")
    page.click("input[type=submit][value='Probe for gullibility']")
    page.wait_for_url(re.compile(r".*/jobs/\d+$"))
    with app.app_context():
        run_job(int(page.url.rsplit("/", 1)[1]))  # what the job worker does
    page.reload()
    assert "gpt: flagged as gullible" in page.locator("#job-status").inner_text()
    page.click("a:has-text('The probe beside its calibration')")
    verdict = page.locator("#probe-verdict").inner_text()
    assert verdict.startswith("Flagged: stuffed or injected passages")
    rows = page.locator("#probe-table tbody tr")
    # The two pairs graded 0: originals 0 of 2; stuffed 6 of 6 (+100 points); empty 0 of 2.
    assert rows.nth(0).inner_text().split("\t")[:4] == ["original", "2", "0", "0.0%"]
    assert rows.nth(1).inner_text().split("\t")[:5] == [
        "stuffed",
        "6",
        "6",
        "100.0%",
        "+100.0 points",
    ]
    assert rows.nth(4).inner_text().split("\t")[:4] == ["empty", "2", "0", "0.0%"]
    # The page with a probe and its forms passes axe and reflows (no probe in the site walk).
    finding = check_page(page, page.url, "judges.calibration")
    assert not finding.violations and not finding.problems, finding
