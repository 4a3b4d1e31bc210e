"""The prefetching labeling loop in a real browser: the next pair shows at once, answers are
saved in the background and survive the network going away, only the pair on screen is
leased, and a pair others completed meanwhile is passed over."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Assignment, Chunk, Judgment, Pair, User
from ndcg_labeler.services import labeling
from tests.browser.live import (
    LiveServer,
    PausedSaves,
    answer_and_wait,
    log_in,
    shown_docid,
    wait_saved,
)
from tests.factory import build, make_user


def _grades(app) -> list[tuple[str, int | None]]:
    with app.app_context():
        db.session.remove()
        rows = db.session.execute(
            sa.select(Chunk.docid, Judgment.grade)
            .join(Chunk, Chunk.id == Judgment.chunk_id)
            .order_by(Chunk.docid)
        )
        return [tuple(row) for row in rows]


def _leased(app) -> list[str]:
    with app.app_context():
        db.session.remove()
        rows = db.session.scalars(
            sa.select(Chunk.docid)
            .join(Pair, Pair.chunk_id == Chunk.id)
            .join(Assignment, Assignment.pair_id == Pair.id)
        )
        return sorted(rows)


def _open(page, live_server: LiveServer, test_set_id: int) -> None:
    """Open the labeling page and wait until its next pairs are prefetched."""
    with page.expect_response(lambda r: "/upcoming.json" in r.url):
        page.goto(f"{live_server.url}/test-sets/{test_set_id}/label")


@pytest.mark.browser
def test_answers_given_offline_arrive_when_the_network_returns(
    live_server: LiveServer, browser_page
) -> None:
    app = live_server.app
    built = build(app, "Offline", pool={"q1": ["d1", "d2", "d3", "d4", "d5"]})
    page = browser_page
    log_in(page, live_server.url)
    _open(page, live_server, built.test_set_id)

    page.context.set_offline(True)
    shown = []
    for key in ("3", "1", "2"):
        shown.append(shown_docid(page))
        before = shown[-1]
        page.keyboard.press(key)  # the next pair shows although nothing can be sent
        page.wait_for_function(
            "d => document.querySelector('.chunk-panel .panel-kicker code').textContent !== d",
            arg=before,
        )
    state = page.locator("[data-save-state]")
    page.wait_for_selector("[data-save-state][data-state=failed]")
    assert "the server cannot be reached" in state.inner_text()
    assert "3 answers kept here" in state.inner_text()
    assert _grades(app) == []

    page.context.set_offline(False)
    wait_saved(page)  # retried with backoff until acknowledged
    assert _grades(app) == [(shown[0], 3), (shown[1], 1), (shown[2], 2)]
    assert "All answers saved" in state.inner_text()


@pytest.mark.browser
def test_only_the_pair_on_screen_is_leased(live_server: LiveServer, browser_page) -> None:
    app = live_server.app
    built = build(app, "Leases", pool={"q1": ["d1", "d2", "d3", "d4"]})
    page = browser_page
    log_in(page, live_server.url)
    _open(page, live_server, built.test_set_id)
    # Three more pairs are prefetched in the page, but only d1 is reserved.
    assert page.evaluate("document.querySelectorAll('[data-card]').length") == 1
    assert _leased(app) == ["d1"]
    with page.expect_response(lambda r: r.url.endswith("/lease.json")):
        answer_and_wait(page, "2")
    assert shown_docid(page) == "d2" and _leased(app) == ["d2"]
    assert page.url.endswith(f"/label/{built.pairs[1]}")  # the address follows the pair

    # Leaving without answering gives the lease back at once.
    page.goto(live_server.url + "/")
    for _ in range(50):  # the beacon is sent as the page goes; give the server a moment
        if not _leased(app):
            break
        page.wait_for_timeout(100)
    assert _leased(app) == []


@pytest.mark.browser
def test_a_pair_completed_by_others_meanwhile_is_passed_over(
    live_server: LiveServer, browser_page
) -> None:
    app = live_server.app
    built = build(app, "Taken", pool={"q1": ["d1", "d2", "d3"]}, target=1)
    other = make_user(app, "quick-colleague")
    page = browser_page
    log_in(page, live_server.url)
    _open(page, live_server, built.test_set_id)
    # After the page prefetched d2, a colleague answers it.
    with app.app_context():
        pair = db.session.get_one(Pair, built.pairs[1])
        labeling.save_for_pair(pair, db.session.get_one(User, other), grade=1)
    page.keyboard.press("3")
    page.wait_for_function(
        "() => document.querySelector('.chunk-panel .panel-kicker code').textContent === 'd3'"
    )
    assert "completed by others" in page.locator("[data-save-state]").inner_text()
    wait_saved(page)
    assert _grades(app) == [("d1", 3), ("d2", 1)]
    assert _leased(app) == ["d3"]


@pytest.mark.browser
def test_the_last_answer_leads_to_the_done_page_once_saved(
    live_server: LiveServer, browser_page
) -> None:
    app = live_server.app
    built = build(app, "Short", pool={"q1": ["d1", "d2"]})
    page = browser_page
    log_in(page, live_server.url)
    _open(page, live_server, built.test_set_id)
    answer_and_wait(page, "3")
    with page.expect_navigation(url=f"{live_server.url}/test-sets/{built.test_set_id}/label"):
        page.keyboard.press("0")  # nothing prefetched is left: the server's done page
    assert "Nothing left for you to label here" in page.content()
    assert _grades(app) == [("d1", 3), ("d2", 0)]


@pytest.mark.browser
def test_answers_unsent_when_the_page_is_left_are_delivered_from_the_next_page(
    live_server: LiveServer, browser_page, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = live_server.app
    built = build(app, "Leave", pool={"q1": ["d1", "d2", "d3"]})
    page = browser_page
    log_in(page, live_server.url)
    _open(page, live_server, built.test_set_id)
    saves = PausedSaves(monkeypatch)
    saves.refuse()  # saves fail for now
    for key in ("2", "1"):
        before = shown_docid(page)
        page.keyboard.press(key)
        page.wait_for_function(
            "d => document.querySelector('.chunk-panel .panel-kicker code').textContent !== d",
            arg=before,
        )
    page.wait_for_selector("[data-save-state][data-state=failed]")
    # Leaving asks first (answers are unsent); the person leaves anyway, to the home page.
    asked: list[str] = []
    page.on("dialog", lambda dialog: (asked.append(dialog.type), dialog.accept()))
    with page.expect_navigation(url=live_server.url + "/"):
        page.click("nav >> text=Test sets")
    assert asked == ["beforeunload"]
    assert _grades(app) == []
    saves.allow()  # the server takes saves again: the home page delivers them
    # Delivered, then forgotten by the page.
    page.wait_for_function(
        "() => !Object.keys(localStorage).some((key) => key.startsWith('ndcg-labeling:'))"
    )
    assert _grades(app) == [("d1", 2), ("d2", 1)]
