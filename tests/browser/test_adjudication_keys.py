"""Adjudication by keyboard: a digit sets the final grade and shows the next disputed pair,
`s` skips, `u` goes back; the review queue's rows are links as a whole."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Adjudication, Chunk
from tests.browser.live import LiveServer, log_in
from tests.factory import build, judge, person

PAIR = re.compile(r".*/review/\d+/\d+$")


def _docid(page) -> str:
    return re.search(r"/ (\S+)$", page.locator("h1").inner_text()).group(1)


def _finals(app) -> dict[str, int]:
    with app.app_context():
        db.session.remove()
        rows = db.session.execute(
            sa.select(Chunk.docid, Adjudication.grade).join(
                Chunk, Chunk.id == Adjudication.chunk_id
            )
        )
        return dict(rows.all())


@pytest.mark.browser
def test_keys_set_final_grades_skip_and_go_back(live_server: LiveServer, browser_page) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    built = build(app, "Disputes", pool={"q1": ["d1", "d2", "d3"]}, target=2)
    for who, grade in (("alice", 0), ("bob", 3)):
        person(app, who)
        for docid in ("d1", "d2", "d3"):  # every pair disputed: 0 against 3
            judge(app, built.test_set_id, "q1", docid, who, "graded", grade)
    log_in(page, base)

    page.goto(f"{base}/test-sets/{built.test_set_id}/review")
    first_row = page.locator("table.review-queue tbody tr").first
    box = first_row.locator("td").first.bounding_box()  # the query text, not the link itself
    page.mouse.click(box["x"] + 5, box["y"] + 5)  # the whole row is the link
    page.wait_for_url(PAIR)
    first = _docid(page)

    with page.expect_navigation(url=PAIR):
        page.keyboard.press("2")  # final grade 2, then the next disputed pair
    assert _finals(app) == {first: 2}
    second = _docid(page)
    assert second != first

    with page.expect_navigation(url=PAIR):
        page.keyboard.press("s")  # skip: the one after it, nothing saved
    third = _docid(page)
    assert third not in (first, second) and _finals(app) == {first: 2}

    with page.expect_navigation(url=PAIR):
        page.keyboard.press("u")  # back to the pair skipped
    assert _docid(page) == second

    page.keyboard.press("n")  # the note, then Enter saves with the chosen grade
    assert page.evaluate("document.activeElement.tagName") == "TEXTAREA"
    page.keyboard.type("both readings are defensible")
    page.locator("input[name=grade][value='1']").check()
    page.locator("textarea").focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert _finals(app) == {first: 2, second: 1}
