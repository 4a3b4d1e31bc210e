"""The run table names both means (ours and trec_eval's `all`), explains them, links the manual."""

from __future__ import annotations

import io
import math

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet, User
from ndcg_labeler.services import runs as run_service
from tests.browser.live import LiveServer, log_in
from tests.factory import build_test_set, grade

L3 = math.log2(3)
QUERIES = {"q1": "leave", "q2": "expenses", "q3": "dress code", "q5": "parking"}
# q3 is judged with nothing relevant (undefined for us, 0 for trec_eval); q5 has no judgment.
QRELS = [("q1", "a", 3), ("q1", "b", 1), ("q2", "c", 2), ("q3", "d", 0), ("q3", "e", 0)]
RUN = b"q1 Q0 b 1 9 s\nq1 Q0 a 2 8 s\nq2 Q0 x 1 9 s\nq2 Q0 c 2 8 s\nq3 Q0 d 1 9 s\nq5 Q0 a 1 9 s\n"
Q1 = (1 + 3 / L3) / (3 + 1 / L3)
Q2 = (2 / L3) / 2


@pytest.mark.browser
def test_the_run_table_explains_its_two_means(live_server: LiveServer, browser_page) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    with app.app_context():
        test_set = build_test_set("means", QUERIES, QRELS)
        admin = db.session.scalar(sa.select(User).where(User.username == "admin"))
        run = run_service.upload_run(test_set, io.BytesIO(RUN), "bm25.trec", "bm25", admin)
        test_set_id, run_id = test_set.id, run.id
        db.session.remove()
    log_in(page, base)
    page.goto(f"{base}/test-sets/{test_set_id}/dashboard/runs/{run_id}")
    figures = page.locator("#live-scores .mean-figures")
    assert figures.inner_text() == (
        f"mean over 2 defined queries: {(Q1 + Q2) / 2:.4f}; "
        f"trec_eval all over 3 queries: {(Q1 + Q2) / 3:.4f}"
    )
    explained = page.locator("#live-scores .mean-explained")
    assert explained.is_visible()
    assert "counts a judged query without a relevant chunk as 0" in explained.inner_text()
    link = explained.get_by_role("link", name="Scoring conventions: one mean, two figures")
    assert link.get_attribute("href") == (
        "http://127.0.0.1:8000/reference/scoring/#one-mean-two-figures"
    )

    # q5 gets its first (relevant) grade elsewhere: both figures follow without a reload.
    with app.app_context():
        grade(db.session.get_one(TestSet, test_set_id), "q5", "a", 3, "maria")
        db.session.remove()
    expected = (
        f"mean over 3 defined queries: {(Q1 + Q2 + 1) / 3:.4f}; "
        f"trec_eval all over 4 queries: {(Q1 + Q2 + 1) / 4:.4f}"
    )
    page.wait_for_function(
        "text => document.querySelector('#live-scores .mean-figures').innerText === text",
        arg=expected,
        timeout=5000,
    )
