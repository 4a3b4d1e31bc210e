"""Issue 31 items 2-4 in a real browser: a few-shot version beside the zero-shot one, an
ensemble's κ beside its members', and the machine-vs-people queue resolved by an admin."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import judges
from tests.browser.live import LiveServer, log_in
from tests.factory import make_user
from tests.judges.two_models import PAIRS, TwoModels, build_ens_set, quadratic_kappa


@pytest.fixture
def llm() -> Iterator[TwoModels]:
    server = TwoModels().start()
    yield server
    server.stop()


def _run(app, test_set_id: int, name: str, which: str) -> None:
    """What the job worker does once the page queued a run."""
    with app.app_context():
        judges.run_judge(
            db.session.get_one(TestSet, test_set_id), judges.require_judge(name), which
        )
        db.session.remove()


@pytest.mark.browser
def test_few_shot_ensemble_and_the_conflicts_queue(
    live_server: LiveServer, browser_page, llm: TwoModels
) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    make_user(app, "ann")
    with app.app_context():
        test_set_id = build_ens_set(llm.url)
        alpha_id = judges.require_judge("alpha").id
        db.session.remove()
    _run(app, test_set_id, "alpha", "human")
    log_in(page, base)

    # Few-shot: K = 2 set on the calibration page, run again; both versions side by side.
    page.goto(f"{base}/test-sets/{test_set_id}/judges/{alpha_id}")
    page.fill("#shots-k", "2")
    page.click("button:has-text('Set few-shot examples')")
    page.wait_for_url(f"{base}/test-sets/{test_set_id}/judges/{alpha_id}#versions-heading")
    _run(app, test_set_id, "alpha", "human")
    page.reload()
    rows = page.locator("#prompt-versions tbody tr")
    assert rows.count() == 2
    assert "few-shot, K = 2 (current)" in rows.nth(0).inner_text()
    assert "zero-shot" in rows.nth(1).inner_text()
    assert [rows.nth(i).locator("td").first.inner_text() for i in range(2)] == ["12", "12"]

    # An ensemble of alpha and beta, defined in the browser, then run.
    page.goto(f"{base}/judges/")
    page.click("#new-ensemble")
    page.fill("#name", "duo")
    page.select_option("#members", ["alpha", "beta"])
    page.click("input[type=submit][value='Add ensemble']")
    page.wait_for_url(f"{base}/judges/")
    _run(app, test_set_id, "duo", "all")
    with app.app_context():
        duo_id = judges.require_judge("duo").id
        db.session.remove()
    page.goto(f"{base}/test-sets/{test_set_id}/judges/{duo_id}")
    members = page.locator("#ensemble-members tbody tr")
    names = [members.nth(i).locator("th").inner_text() for i in range(members.count())]
    assert names == ["duo (ensemble)", "alpha", "beta"]
    graded = [p for p in PAIRS if p[2] is not None]
    human = [p[2] for p in graded]
    # alpha runs few-shot now; its answers do not depend on the prompt (the fake reads markers).
    expected = [
        quadratic_kappa(human, [min(p[3], p[4]) for p in graded]),
        quadratic_kappa(human, [p[3] for p in graded]),
        quadratic_kappa(human, [p[4] for p in graded]),
    ]
    shown = [members.nth(i).locator("td").nth(1).inner_text() for i in range(3)]
    assert shown == [f"{k:.3f}" for k in expected]
    assert "disagree on 8 of 15 pairs" in page.locator("#ensemble-uncertainty").inner_text()
    # Its cost is its members' answers: alpha's 12 zero-shot, 12 + 3 few-shot, beta's 15, at
    # 50 tokens in and 5 out each (the fake's usage); no prices, so no dollars.
    spent = page.locator("#cost-spent li").first.inner_text()
    assert spent.startswith("Its members' answers on this test set (alpha, beta")
    assert "2,100 tokens in, 210 out; unknown (no prices set)" in spent
    worst = page.locator("#worst-disagreements tbody tr").first.inner_text()
    assert "d51" in worst

    # The machine-vs-people queue: the largest disagreement first; resolve it.
    page.click("#conflicts-link")
    page.wait_for_url(f"{base}/test-sets/{test_set_id}/judges/conflicts")
    open_rows = page.locator("#conflicts-open tbody tr")
    before = open_rows.count()
    assert before == 8  # ann 2+ steps from alpha (d51), beta (4 pairs) and duo (3 pairs)
    assert "d51" in open_rows.first.inner_text()
    open_rows.first.locator("button:has-text('The person was right')").click()
    page.wait_for_url(f"{base}/test-sets/{test_set_id}/judges/conflicts")
    assert page.locator("#conflicts-open tbody tr").count() == before - 1
    assert "the person was right" in page.locator("#conflicts-resolved").inner_text()
