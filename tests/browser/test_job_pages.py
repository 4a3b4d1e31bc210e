"""Following jobs in the browser: the list and a job's page update as the job runs, and Cancel
asks first (dismissed, the job keeps running; accepted, it stops)."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, User
from ndcg_labeler.services.jobs.records import create_job
from tests.browser.live import LiveServer, log_in
from tests.factory import build_test_set


def _progress(app, job_id: int, **values: object) -> None:
    with app.app_context():
        db.session.execute(sa.update(Job).where(Job.id == job_id).values(**values))
        db.session.commit()


@pytest.mark.browser
def test_the_list_and_the_page_follow_a_job_and_cancel_asks(
    live_server: LiveServer, browser_page
) -> None:
    from playwright.sync_api import expect  # as conftest: only once Chromium is known there

    page, base, app = browser_page, live_server.url, live_server.app
    with app.app_context():
        test_set = build_test_set("Jobs", {"q1": "one"})
        admin = db.session.scalar(sa.select(User).where(User.username == "admin"))
        job_id = create_job("pool", test_set.id, admin.id, {"runs": [], "depth": 10}).id
        db.session.remove()
    log_in(page, base)
    page.goto(f"{base}/jobs/")
    row = page.locator("#jobs-list tbody tr").first
    assert "queued" in row.inner_text()
    # A worker takes it and reports half of its work: the list shows it without a reload.
    _progress(app, job_id, state="running", done=5, total=10, heartbeat_at=sa.func.now())
    expect(page.locator("#jobs-list tbody tr").first).to_contain_text("50%", timeout=12_000)
    page.goto(f"{base}/jobs/{job_id}")
    asked: list[str] = []

    def dismiss(dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.get_by_role("button", name="Cancel").click()
    assert asked and re.match(rf"Cancel job {job_id}\? What it has done so far", asked[0])
    with app.app_context():
        assert not db.session.get_one(Job, job_id).cancel_requested
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Cancel").click()
    page.wait_for_selector("text=cancelling")
    with app.app_context():
        assert db.session.get_one(Job, job_id).cancel_requested
