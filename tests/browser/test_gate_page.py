"""The gate's page in a real browser: from the compare page to a verdict, readable by axe and
at 390 px, with its reports downloaded as files."""

from __future__ import annotations

import pytest
from scipy import stats

from tests.browser.a11y import AXE, check_page
from tests.browser.live import LiveServer, log_in
from tests.evaluation.scenario import BASE_VALUES, CAND, build_gate_set


@pytest.mark.browser
def test_compare_leads_to_a_readable_verdict(live_server: LiveServer, browser_page) -> None:
    page, base = browser_page, live_server.url
    page.context.add_init_script(path=str(AXE))  # axe-core in every page, as the walk
    test_set_id = build_gate_set(live_server.app)
    log_in(page, base)
    page.goto(f"{base}/test-sets/{test_set_id}/dashboard/compare/")  # the two oldest runs
    page.click("#gate-link")
    page.fill("input[name=measure]", "P_1")
    page.click("form.gate-form button[type=submit]")
    assert page.locator("#verdict-heading").inner_text() == "Fail: the candidate regressed"
    # One measure: Holm leaves scipy's paired t-test p as it is.
    p = stats.ttest_rel(CAND["P_1"], BASE_VALUES).pvalue
    row = page.locator("#gate-table tbody tr").inner_text().split()
    assert row[:2] == ["P_1", "fail"] and f"{p:.4f}" in row
    finding = check_page(page, page.url, "gate.page")
    assert not finding.violations and not finding.problems, finding
    with page.expect_download() as download:
        page.click("text=Markdown")
    assert download.value.suggested_filename == "gate.md"
