"""A first day in the browser: the checklist's next action pools two runs, an annotator who
came too early is told what is missing and by whom it can be fixed, then starts labeling."""

from __future__ import annotations

import io
import re

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Pair
from ndcg_labeler.services import runs as run_service
from tests.browser.live import LiveServer, log_in
from tests.factory import PASSWORD, build_test_set, grant, make_user, trec

CORPUS = {d: f"Passage {d} about leave." for d in ("d1", "d2", "d3", "d4", "d5", "d6")}
# Top 10 of both runs: q1 {d1, d2, d3, d4} and q2 {d5, d6}, six pairs.
RUNS = {"A": {"q1": ["d1", "d2", "d3"], "q2": ["d5"]}, "B": {"q1": ["d2", "d4"], "q2": ["d6"]}}


@pytest.mark.browser
def test_the_next_step_is_always_on_screen(live_server: LiveServer, browser_page) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    with app.app_context():
        test_set = build_test_set(
            "Leave", {"q1": "parental leave", "q2": "sick leave"}, corpus=CORPUS
        )
        for name, ranking in RUNS.items():
            run_service.upload_run(test_set, io.BytesIO(trec(ranking)), "r.trec", name, None)
        test_set_id = test_set.id
        db.session.remove()
    grant(app, test_set_id, make_user(app, "ann"))

    # The annotator arrives first: nothing to label, and the page says why and who can help.
    log_in(page, base, "ann", PASSWORD)
    page.goto(f"{base}/test-sets/{test_set_id}")
    blocked = page.locator("#checklist-blocked").inner_text()
    assert blocked == (
        "Nothing to label yet: 2 runs are stored, but their top chunks have not been pooled "
        "for labeling yet. An admin can fix it: admin."
    )
    assert page.locator("#next-action").count() == 0
    page.click("form[data-logout] button")
    page.wait_for_url(re.compile(r".*/login$"))

    # The admin sees the one next action as a button, and Pooling in the test set's menu.
    log_in(page, base)
    page.goto(f"{base}/test-sets/{test_set_id}/dashboard/")
    assert page.locator("nav.subnav a", has_text="Pooling").count() == 1
    page.goto(f"{base}/test-sets/{test_set_id}")
    button = page.locator("#next-action")
    assert button.inner_text() == "Pool the top 10 of your 2 runs: 6 pairs"
    button.click()
    page.wait_for_url(re.compile(rf".*/test-sets/{test_set_id}/dashboard/pool/.*"))
    assert "Added 6 pairs to the labeling queue" in page.locator(".flashes").inner_text()
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Pair)) == 6
    page.goto(f"{base}/test-sets/{test_set_id}")
    assert page.locator("#next-action").inner_text() == (
        "Start labeling: 6 of 6 pairs have no grade"
    )
    page.click("form[data-logout] button")
    page.wait_for_url(re.compile(r".*/login$"))

    # Now the annotator's next action is labeling, and it leads to a pair.
    log_in(page, base, "ann", PASSWORD)
    page.goto(f"{base}/test-sets/{test_set_id}")
    start = page.locator("#next-action")
    assert start.inner_text() == "Start labeling: 6 pairs for you"
    start.click()
    page.wait_for_url(re.compile(rf".*/test-sets/{test_set_id}/label/\d+$"))
