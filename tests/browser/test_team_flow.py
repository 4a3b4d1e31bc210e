"""Disagreement review in the browser (CSRF and CSP on): find the disputed pair, set its final
grade, see the run's score follow, and withdraw it again."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Adjudication, JudgmentEvent
from tests.browser.live import ADMIN_PASSWORD, LiveServer
from tests.factory import build_runs

L3 = math.log2(3)


@pytest.mark.browser
def test_review_adjudicate_and_policy_verdict(live_server: LiveServer, browser_page) -> None:
    """d1 is graded 0 and 2: median 0 puts run B ahead, max puts A ahead (see
    tests/team/test_policies.py). A final grade of 2 makes A perfect under every policy."""
    page, base, app = browser_page, live_server.url, live_server.app
    test_set_id = build_runs(app, "Handbook").id

    page.goto(base + "/login")
    page.fill("#username", "admin")
    page.fill("#password", ADMIN_PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(base + "/")

    page.goto(f"{base}/test-sets/{test_set_id}/agreement")
    assert page.locator("h1").inner_text().endswith("agreement")
    page.goto(f"{base}/test-sets/{test_set_id}/policies")
    assert "The run order depends on the policy." in page.locator(".verdict").inner_text()

    page.goto(f"{base}/test-sets/{test_set_id}/review")
    page.get_by_role("link", name="d1 of query q1: review").click()
    assert "alice" in page.locator("table").first.inner_text()
    page.get_by_label("2 · Relevant").check()
    page.fill("textarea[name=note]", "answers it in part")
    page.get_by_role("button", name="Save final grade").click()
    page.wait_for_url(f"{base}/test-sets/{test_set_id}/review")  # nothing else is disputed
    assert "Final grade of q1 / d1: 2 (saved)." in page.locator(".flashes").inner_text()
    with app.app_context():
        row = db.session.scalar(sa.select(Adjudication))
        assert (row.grade, row.note) == (2, "answers it in part")
        db.session.remove()

    page.goto(f"{base}/test-sets/{test_set_id}/policies")
    assert "Run order is the same under every policy." in page.locator(".verdict").inner_text()
    assert f"{(1 + 2 / L3) / (2 + 1 / L3):.4f}" in page.locator("table.policies").inner_text()

    page.goto(f"{base}/test-sets/{test_set_id}/review?all=1")
    page.get_by_role("link", name="d1 of query q1: review").click()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Remove the final grade").click()
    page.wait_for_load_state("networkidle")
    assert "final grade removed" in page.get_by_role("region", name="History").inner_text()
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Adjudication)) == 0
        kinds = db.session.scalars(
            sa.select(JudgmentEvent.new_grade).where(JudgmentEvent.kind == "adjudication")
        ).all()
        assert kinds == [2, None]
        db.session.remove()
