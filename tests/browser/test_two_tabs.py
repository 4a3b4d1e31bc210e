"""Two tabs on the same pair: the second tab's grade does not silently replace the first's."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judgment
from tests.browser.live import LiveServer, answer_and_wait, log_in
from tests.factory import build


@pytest.mark.browser
def test_the_second_tab_gets_a_conflict_and_may_replace(live_server: LiveServer, browser_page):
    app, base = live_server.app, live_server.url
    built = build(app, "Two tabs", pool={"q1": ["d1", "d2"]})
    page = browser_page
    log_in(page, base)
    url = f"{base}/test-sets/{built.test_set_id}/label/{built.pairs[0]}"
    other = page.context.new_page()
    page.goto(url)
    other.goto(url)

    answer_and_wait(page, "3")  # tab 1 grades 3 and moves on (saved in the background)
    other.bring_to_front()
    # Tab 2, rendered before, shows its next pair at once; its background save is refused
    # (409) and the pair comes back on the conflict page; nothing is overwritten.
    with other.expect_response(lambda r: r.url.endswith("/save.json")) as refused:
        other.keyboard.press("1")
    assert refused.value.status == 409
    other.wait_for_selector("#stored-verdict")
    assert "You changed this judgment elsewhere" in other.locator("h1").inner_text()
    assert other.locator("#stored-verdict").inner_text().startswith("grade 3")
    with app.app_context():
        grades = db.session.scalars(sa.select(Judgment.grade)).all()
    assert grades == [3]

    with other.expect_navigation():
        other.click("#replace-stored")  # one more click replaces it
    with app.app_context():
        db.session.remove()
        grades = db.session.scalars(sa.select(Judgment.grade)).all()
    assert grades == [1]
