"""Unsent labeling answers outlive the tab: kept in localStorage per user, delivered by the next
page that user opens (even after the tab was closed), never sent by another user signed in in
the same browser, and shared safely by several tabs of the same user."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, User
from tests.browser.live import LiveServer, PausedSaves, log_in, shown_docid, wait_saved
from tests.factory import PASSWORD, build, make_user

KEPT = "ndcg-labeling:"


def _judged(app) -> list[tuple[str, str, int | None]]:
    """(annotator, docid, grade) of every judgment stored."""
    with app.app_context():
        db.session.remove()
        rows = db.session.execute(
            sa.select(User.username, Chunk.docid, Judgment.grade)
            .join(Chunk, Chunk.id == Judgment.chunk_id)
            .join(User, User.id == Judgment.annotator_id)
            .order_by(User.username, Chunk.docid)
        )
        return [tuple(row) for row in rows]


def _kept(page) -> int:
    """How many answers the browser keeps for anyone (every user's, every test set's)."""
    script = f"Object.keys(localStorage).filter((k) => k.startsWith('{KEPT}')).length"
    return int(page.evaluate(script))


def _open(page, url: str) -> None:
    """Open a labeling page and wait until its next pairs are prefetched."""
    with page.expect_response(lambda r: "/upcoming.json" in r.url):
        page.goto(url)


def _answer(page, key: str) -> str:
    """Answer the shown pair with `key` (saved or not); returns its docid once the next shows."""
    before = shown_docid(page)
    page.bring_to_front()
    page.keyboard.press(key)
    page.wait_for_function(
        "d => document.querySelector('.chunk-panel .panel-kicker code')?.textContent !== d",
        arg=before,
    )
    return before


def _wait_for(page, check, what: str) -> None:
    """Poll a database check for up to 10 s (delivery happens in the background)."""
    for _ in range(100):
        if check():
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.browser
def test_answers_of_a_tab_closed_offline_arrive_from_a_new_page(
    live_server: LiveServer, browser_page
) -> None:
    app, base = live_server.app, live_server.url
    built = build(app, "Closed", pool={"q1": ["d1", "d2", "d3", "d4"]})
    page = browser_page
    context = page.context
    log_in(page, base)
    _open(page, f"{base}/test-sets/{built.test_set_id}/label")
    context.set_offline(True)
    given = [(_answer(page, "3"), 3), (_answer(page, "1"), 1)]
    page.wait_for_selector("[data-save-state][data-state=failed]", timeout=30_000)
    page.close()  # the tab goes with its answers unsent (no "leave?" question when closed so)
    assert _judged(app) == []

    context.set_offline(False)
    fresh = context.new_page()
    fresh.goto(base + "/")  # any page of the site, in a new tab
    expected = sorted(("admin", docid, grade) for docid, grade in given)
    _wait_for(fresh, lambda: _judged(app) == expected, "the closed tab's answers")
    fresh.wait_for_function(f"() => !Object.keys(localStorage).some((k) => k.startsWith('{KEPT}'))")


@pytest.mark.browser
def test_answers_kept_by_the_old_session_queue_move_to_local_storage(
    live_server: LiveServer, browser_page, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, base = live_server.app, live_server.url
    built = build(app, "Migrate", pool={"q1": ["d1", "d2"]})
    page = browser_page
    context = page.context
    log_in(page, base)
    user_id = page.evaluate("document.body.dataset.user")
    # What the previous version kept in the tab: one list per user and test set.
    upcoming = f"/test-sets/{built.test_set_id}/label/upcoming.json"
    old = [
        {
            "save": f"/test-sets/{built.test_set_id}/label/{built.pairs[1]}/save.json",
            "url": f"/test-sets/{built.test_set_id}/label/{built.pairs[1]}",
            "pairId": str(built.pairs[1]),
            "fields": [["version", "0"], ["active_ms", "1200"], ["grade", "2"]],
        }
    ]
    page.evaluate(
        "([key, value]) => sessionStorage.setItem(key, value)",
        [f"{KEPT}{user_id}:{upcoming}", json.dumps(old)],
    )
    saves = PausedSaves(monkeypatch)
    saves.refuse()  # not deliverable for now
    page.goto(base + "/")
    in_session = f"Object.keys(sessionStorage).filter((k) => k.startsWith('{KEPT}')).length"
    assert page.evaluate(in_session) == 0
    assert _kept(page) == 1
    page.close()  # the tab (and its sessionStorage) goes; the answer stays

    saves.allow()
    fresh = context.new_page()
    fresh.goto(base + "/")
    _wait_for(fresh, lambda: _judged(app) == [("admin", "d2", 2)], "the migrated answer")


@pytest.mark.browser
def test_another_user_in_the_same_browser_never_sends_them(
    live_server: LiveServer, browser_page, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, base = live_server.app, live_server.url
    bea = make_user(app, "bea")
    built = build(app, "Shared", pool={"q1": ["d1", "d2", "d3", "d4"]}, members=(bea,))
    page = browser_page
    context = page.context
    sent: list[str] = []
    context.on("request", lambda r: sent.append(r.url) if r.url.endswith("/save.json") else None)
    log_in(page, base)
    saves = PausedSaves(monkeypatch)
    saves.refuse()  # the admin's saves fail
    _open(page, f"{base}/test-sets/{built.test_set_id}/label")
    given = [(_answer(page, "3"), 3), (_answer(page, "2"), 2)]
    page.wait_for_selector("[data-save-state][data-state=failed]", timeout=30_000)
    page.close()
    assert _kept_in(context, base) == 2

    # The admin logs out (from a page that cannot deliver either); Bea signs in in the same
    # browser, and the server is reachable again.
    page = context.new_page()
    page.goto(base + "/")
    page.once("dialog", lambda dialog: dialog.accept())  # "2 answers are not saved yet …"
    page.click("nav button:has-text('Log out')")
    page.wait_for_url(base + "/login")
    saves.allow()
    sent.clear()
    log_in(page, base, "bea", PASSWORD)
    _open(page, f"{base}/test-sets/{built.test_set_id}/label")
    wait_saved(page)  # her own count: nothing of hers waits
    assert "All answers saved" in page.locator("[data-save-state]").inner_text()
    bea_pair = _answer(page, "1")
    wait_saved(page)
    page.goto(base + "/")
    page.wait_for_timeout(1500)  # time enough for any page to deliver what it would
    assert _judged(app) == [("bea", bea_pair, 1)]
    assert len(sent) == 1  # her one answer; the admin's were never sent
    assert _kept(page) == 2  # and are still kept for their owner

    # The admin comes back: the first page delivers them.
    page.click("nav button:has-text('Log out')")
    page.wait_for_url(base + "/login")
    log_in(page, base)
    expected = sorted([("admin", docid, grade) for docid, grade in given] + [("bea", bea_pair, 1)])
    _wait_for(page, lambda: _judged(app) == expected, "the admin's answers")
    page.wait_for_function(f"() => !Object.keys(localStorage).some((k) => k.startsWith('{KEPT}'))")


def _kept_in(context, base: str) -> int:
    """_kept from a throwaway page of the context (the labeling tab is gone)."""
    probe = context.new_page()
    probe.goto(base + "/login")  # no user on it: a page that delivers nothing
    try:
        return _kept(probe)
    finally:
        probe.close()


@pytest.mark.browser
@pytest.mark.parametrize(
    ("close_one", "locks", "ledger"),
    [(False, True, True), (True, True, True), (False, False, True), (False, True, False)],
    ids=["both-stay", "one-closed", "no-web-locks", "no-indexeddb"],
)
def test_two_tabs_offline_lose_nothing_and_send_each_answer_once(
    live_server: LiveServer, browser_page, close_one: bool, locks: bool, ledger: bool
) -> None:
    app, base = live_server.app, live_server.url
    pool = {"q1": ["d1", "d2", "d3"], "q2": ["e1", "e2", "e3"]}
    built = build(app, "Tabs", pool=pool)
    first = browser_page
    context = first.context
    acknowledged: Counter[str] = Counter()
    refused: list[str] = []

    def seen(response) -> None:
        if response.url.endswith("/save.json"):
            if response.status == 200:
                acknowledged[response.url] += 1
            else:
                refused.append(f"{response.status} {response.url}")

    context.on("response", seen)
    if not locks:  # a browser without Web Locks: tabs may both send, never in conflict
        context.add_init_script(
            "Object.defineProperty(Navigator.prototype, 'locks', {get: () => undefined})"
        )
    if not ledger:  # the acknowledged keys cannot be noted in IndexedDB: nothing is lost
        context.add_init_script(
            "Object.defineProperty(window, 'indexedDB', {get: () => undefined})"
        )
    log_in(first, base)
    second = context.new_page()
    label = f"{base}/test-sets/{built.test_set_id}/label"
    _open(first, f"{label}/{built.pairs[0]}")  # q1's first pair
    _open(second, f"{label}/{built.pairs[3]}")  # q2's first pair: its next ones are q2's too
    for page in (first, second):
        assert page.evaluate("navigator.locks === undefined") is not locks
    context.set_offline(True)
    given = []
    for page, key in ((first, "3"), (second, "1"), (first, "2"), (second, "0")):
        given.append((_answer(page, key), int(key)))
    assert len({docid for docid, _ in given}) == 4  # four different pairs
    for page in (first, second):
        # Each tab counts the other's answers too, as soon as the shared store tells it.
        failed = page.locator("[data-save-state][data-state=failed]")
        failed.filter(has_text="4 answers kept here").wait_for(timeout=30_000)
    if close_one:
        first.close()  # its answers are in the store the other tab shares

    context.set_offline(False)
    alive = [second] if close_one else [first, second]
    expected = sorted(("admin", docid, grade) for docid, grade in given)
    _wait_for(second, lambda: _judged(app) == expected, "every tab's answers")
    for page in alive:
        wait_saved(page)
        assert "All answers saved" in page.locator("[data-save-state]").inner_text()
        assert "/label/" in page.url  # nobody was sent to a conflict page
    second.wait_for_timeout(1500)  # no answer comes round again
    assert refused == []
    assert len(acknowledged) == 4, acknowledged
    if locks and ledger:
        # One tab sends at a time and reads afresh what the tab before it acknowledged (in
        # IndexedDB: Chromium may bring a tab's localStorage removals to another a moment
        # late): each answer goes once.
        assert set(acknowledged.values()) == {1}, acknowledged
    assert _kept(second) == 0
    assert _judged(app) == expected


def _closed_with_two_unsent(page, base: str, test_set_id: int):
    """Give two answers that cannot be saved, close the tab; returns a new page on '/'."""
    context = page.context
    _open(page, f"{base}/test-sets/{test_set_id}/label")
    context.set_offline(True)
    _answer(page, "3")
    _answer(page, "1")
    page.wait_for_selector("[data-save-state][data-state=failed]", timeout=30_000)
    page.close()
    context.set_offline(False)
    return context.new_page()


@pytest.mark.browser
def test_logging_out_delivers_first_or_says_what_stays(
    live_server: LiveServer, browser_page, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, base = live_server.app, live_server.url
    built = build(app, "Logout", pool={"q1": ["d1", "d2", "d3", "d4"]})
    log_in(browser_page, base)
    page = _closed_with_two_unsent(browser_page, base, built.test_set_id)
    saves = PausedSaves(monkeypatch)
    saves.refuse()  # the server cannot take them
    page.goto(base + "/")
    asked: list[str] = []

    def answer(dialog, accept: bool) -> None:
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, False))
    page.click("form[data-logout] button")
    page.wait_for_timeout(500)
    assert asked and asked[0].startswith("2 answers are not saved yet")
    assert page.url == base + "/" and _kept(page) == 2  # still signed in, nothing lost
    page.once("dialog", lambda dialog: answer(dialog, True))
    with page.expect_navigation():
        page.click("form[data-logout] button")
    assert "/login" in page.url and _kept(page) == 2 and _judged(app) == []
    # Back online and signed in again, they are delivered; logging out then asks nothing.
    saves.allow()
    log_in(page, base)
    _wait_for(page, lambda: len(_judged(app)) == 2, "the kept answers")
    with page.expect_navigation():
        page.click("form[data-logout] button")
    assert len(asked) == 2 and "/login" in page.url
