"""The gate's page in a real browser: from the compare page to a verdict, readable by axe and
at 390 px, with its reports downloaded as files."""

from __future__ import annotations

import io

import pytest
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import runs as run_service
from tests.browser.a11y import AXE, check_page
from tests.browser.live import LiveServer, log_in
from tests.evaluation.scenario import BASE_VALUES, BASELINE, CAND, build_gate_set
from tests.factory import trec


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


@pytest.mark.browser
def test_the_gate_run_selects_narrow_by_name_from_the_keyboard(
    live_server: LiveServer, browser_page
) -> None:
    """Hundreds of nightly runs made both selects a wall of names: a filter box narrows them
    (the chosen run always stays), as the compare page's picker."""
    page, base, app = browser_page, live_server.url, live_server.app
    test_set_id = build_gate_set(app)
    with app.app_context():
        test_set = db.session.get(TestSet, test_set_id)
        for day in range(1, 14):
            name = f"nightly-2026-11-{day:02d}"
            run_service.upload_run(test_set, io.BytesIO(trec(BASELINE)), "n.trec", name, None)
        db.session.remove()
    log_in(page, base)
    page.goto(f"{base}/test-sets/{test_set_id}/dashboard/gate/")
    shown = "e => e.filter(o => !o.hidden).map(o => o.text)"
    baseline, candidate = (
        page.locator("select[name=baseline]"),
        page.locator("select[name=candidate]"),
    )
    assert len(baseline.locator("option").evaluate_all(shown)) == 15
    page.get_by_label("Filter runs").focus()
    page.keyboard.type("11-1")
    nightly = [f"nightly-2026-11-{d}" for d in (10, 11, 12, 13)]
    # The two oldest runs stay chosen (and so in view); the 10th to the 13th match "11-1".
    assert baseline.locator("option").evaluate_all(shown) == ["base", *nightly]
    assert candidate.locator("option").evaluate_all(shown) == ["cand", *nightly]
    assert page.locator("[data-filter-status]").inner_text() == "6 of 15 runs shown"
    page.keyboard.press("Enter")  # filters; does not send the form
    assert "candidate=" not in page.url
    page.keyboard.press("Tab")  # to the baseline's select
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")  # past the hidden runs
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert candidate.evaluate("s => s.selectedOptions[0].text") == "nightly-2026-11-12"
    page.get_by_label("Filter runs").fill("")
    assert len(candidate.locator("option").evaluate_all(shown)) == 15
    page.click("form.gate-form button[type=submit]")
    page.wait_for_selector("#verdict-heading")
    assert (
        "Candidate nightly-2026-11-12 against baseline base"
        in page.locator("#gate-result").inner_text()
    )
