"""The overview's PPI++ estimate with its audit status, chosen from the label menu in Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from tests.browser.live import LiveServer, log_in
from tests.evaluation.ppi_scenario import build_ppi_set, expected


@pytest.mark.browser
def test_the_overview_shows_the_ppi_estimate_with_its_audit_status(
    live_server: LiveServer, browser_page, artifacts: Path
) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    build_ppi_set(app, "ppi")
    want = expected(1)  # hand-worked in tests/evaluation/ppi_scenario.py
    with app.app_context():
        test_set_id = db.session.scalar(sa.select(TestSet.id).where(TestSet.name == "ppi"))
        db.session.remove()
    log_in(page, base)
    page.goto(f"{base}/test-sets/{test_set_id}/dashboard/")
    assert page.locator("#ppi-table").count() == 0  # people's labels: no estimate

    # Choose the judge's PPI++ source and k = 1 in the settings form, as a person would.
    page.select_option("#opt-labels", "ppi:gpt")
    page.select_option("#opt-k", "1")
    page.click("form.score-options button[type=submit]")
    page.wait_for_url(re.compile(r".*labels=ppi%3Agpt.*"))
    row = page.locator("#ppi-table tbody tr").first
    assert row.locator("th").inner_text() == "A"
    low, high = want["theta"] - want["half"], want["theta"] + want["half"]
    estimate = row.locator("td").nth(0).inner_text()
    assert estimate == f"{want['theta']:.4f} [{low:.4f}, {high:.4f}]"
    assert row.locator("td").nth(1).inner_text() == f"{19 / 216:.4f}"  # λ̂
    assert row.locator("td").nth(2).inner_text() == "0.6000"  # machine-only mean
    assert row.locator("td").nth(3).inner_text() == "0.6667"  # human-only mean, audited
    assert row.locator("td").nth(4).inner_text() == "12 of 20 queries audited"
    # The machine means above carry the same status, in the settings line and their header.
    assert "12 of 20 queries audited" in page.locator("#live-scores p.settings").inner_text()
    assert page.locator("#ppi-table caption").is_visible()
    page.screenshot(path=str(artifacts / "dashboard-ppi-overview.png"), full_page=True)
