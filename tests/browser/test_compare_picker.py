"""The compare page's run picker in a real browser: A and B stay as chosen."""

from __future__ import annotations

import io
import re

import pytest

from ndcg_labeler.extensions import db
from ndcg_labeler.services import runs as run_service
from tests.browser.live import LiveServer, log_in
from tests.factory import RUN_A, build_dashboard, the_test_set, trec


@pytest.mark.browser
def test_the_picker_keeps_a_swapped_pair_and_adds_a_third_run_last(
    live_server: LiveServer, browser_page
) -> None:
    """The picker listed the runs oldest first and a form sends its checked boxes in that
    order, so after "Swap A and B" any use of the picker swapped them back without a word."""
    page, base, app = browser_page, live_server.url, live_server.app
    demo = build_dashboard(app)
    with app.app_context():
        test_set = the_test_set(demo)
        third = run_service.upload_run(test_set, io.BytesIO(trec(RUN_A)), "c.trec", "C", None)
        third_id = third.id
        db.session.remove()
    log_in(page, base)
    page.goto(base + demo.url(f"/compare/?run={demo.run_a}&run={demo.run_b}"))
    page.get_by_role("link", name="Swap A and B").click()
    page.wait_for_url(re.compile(rf".*run={demo.run_b}&run={demo.run_a}.*"))
    picker = page.locator(".run-picker")
    assert picker.locator("input:checked").evaluate_all("e => e.map(x => x.value)") == [
        str(demo.run_b),
        str(demo.run_a),
    ]
    picker.get_by_label("C").check()
    picker.get_by_role("button", name="Compare").click()
    page.wait_for_load_state()
    runs = re.findall(r"run=(\d+)", page.url)
    assert runs == [str(demo.run_b), str(demo.run_a), str(third_id)]


@pytest.mark.browser
def test_a_long_picker_filters_the_runs_by_name_and_keeps_the_checked_ones(
    live_server: LiveServer, browser_page
) -> None:
    """Hundreds of nightly runs make a wall of checkboxes: typing part of a name narrows it."""
    page, base, app = browser_page, live_server.url, live_server.app
    demo = build_dashboard(app)
    with app.app_context():
        test_set = the_test_set(demo)
        for day in range(1, 14):
            name = f"nightly-2026-11-{day:02d}"
            run_service.upload_run(test_set, io.BytesIO(trec(RUN_A)), "n.trec", name, None)
        db.session.remove()
    log_in(page, base)
    page.goto(base + demo.url(f"/compare/?run={demo.run_a}&run={demo.run_b}"))
    picker = page.locator(".run-picker")
    filter_box = picker.get_by_label("Filter")
    filter_box.fill("11-1")
    visible = picker.locator("label:visible input[name=run]")
    names = [n.strip() for n in picker.locator("label:visible").all_inner_texts()][1:]
    # A and B stay (checked); of the nightly runs, the 10th to the 13th match "11-1".
    assert names == ["A", "B", *(f"nightly-2026-11-{d}" for d in (10, 11, 12, 13))]
    assert visible.count() == 6
    assert picker.locator("[data-filter-status]").inner_text() == "6 of 15 runs shown"
    filter_box.press("Enter")  # filters; does not send the form
    assert "nightly" not in page.url
    picker.get_by_label("nightly-2026-11-12").check()
    filter_box.fill("")
    assert picker.locator("label:visible input[name=run]").count() == 15
    picker.get_by_role("button", name="Compare").click()
    page.wait_for_load_state()
    assert len(re.findall(r"run=(\d+)", page.url)) == 3
