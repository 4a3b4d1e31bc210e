"""A new admin sets up a test set in the browser and grades with the keyboard alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, JudgmentEvent, TestSet, User
from tests.browser.live import (
    ADMIN_PASSWORD,
    CHROMIUM,
    CHROMIUM_ARGS,
    LiveServer,
    answer_and_wait,
    shown_docid,
    wait_saved,
)
from tests.factory import build

BEIR = Path(__file__).resolve().parents[1] / "data" / "beir_small"
PAIR_URL = re.compile(r".*/test-sets/\d+/label/\d+$")


def _mine(page) -> int:
    """The "Mine: N of M pairs" count shown on the labeling page."""
    label = page.locator("label[for=progress-mine]").inner_text()
    return int(re.search(r"Mine: (\d+) of", label).group(1))


def _docid(page) -> str:
    return shown_docid(page)


def _back(page) -> None:
    """`u`: once every answer is saved, the page goes to the last pair I answered."""
    with page.expect_navigation(url=PAIR_URL):
        page.keyboard.press("u")


@pytest.mark.browser
def test_new_admin_imports_and_grades_with_the_keyboard(
    live_server: LiveServer, browser_page, artifacts: Path
):
    page = browser_page
    base = live_server.url

    # Log in as the first admin.
    page.goto(base + "/")
    page.fill("#username", "admin")
    page.fill("#password", ADMIN_PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(base + "/")

    # Create a test set, then import the small BEIR-format set into it.
    page.click("text=New test set")
    page.fill("#name", "Helpdesk")
    page.select_option("#scale", "3")
    page.click("input[type=submit][value='Create test set']")
    page.wait_for_url(re.compile(r".*/test-sets/\d+/import$"))
    page.set_input_files("#queries", str(BEIR / "queries.jsonl"))
    page.set_input_files("#corpus", str(BEIR / "corpus.jsonl"))
    page.set_input_files("#pool", str(BEIR / "pool.tsv"))
    page.set_input_files("#qrels", str(BEIR / "qrels" / "test.tsv"))
    page.click("input[type=submit][value='Import']")
    page.wait_for_selector(".import-report")

    # Start labeling from the test set's overview.
    page.click("text=Back to the test set")
    page.click("text=Start labeling")
    page.wait_for_url(PAIR_URL)
    assert _mine(page) == 0
    total = int(
        re.search(r"of (\d+) pairs", page.locator("label[for=progress-mine]").inner_text()).group(1)
    )
    assert total == 12

    # Grade five pairs with the keyboard alone: each digit grades and moves on.
    graded: list[str] = []
    for key in ("3", "0", "2", "1", "2"):
        graded.append(_docid(page))
        answer_and_wait(page, key)
    assert len(set(graded)) == 5
    assert _mine(page) == 5
    assert page.locator("#progress-mine").get_attribute("value") == "5"
    sixth = _docid(page)

    # `u` goes back to the last pair; the screen shows my grade; a digit changes it.
    _back(page)
    assert _docid(page) == graded[-1]
    assert "Your answer: 2" in page.locator(".my-answer").inner_text()
    page.screenshot(path=str(artifacts / "labeling.png"), full_page=True)
    answer_and_wait(page, "3")
    # Back where I was; progress still counts five answered pairs, not six.
    assert _docid(page) == sixth
    assert _mine(page) == 5

    # Skip one with `s`: it counts as nothing and the next pair appears.
    answer_and_wait(page, "s")
    assert _docid(page) != sixth and _mine(page) == 5

    with live_server.app.app_context():
        ts = db.session.scalar(sa.select(TestSet).where(TestSet.name == "Helpdesk"))
        admin = db.session.scalar(sa.select(User).where(User.username == "admin"))
        rows = db.session.execute(
            sa.select(Judgment.status, Judgment.grade, Judgment.active_ms)
            .where(
                Judgment.test_set_id == ts.id,
                Judgment.annotator_id == admin.id,
                Judgment.status == "graded",
            )
            .order_by(Judgment.id)
        ).all()
        assert [grade for _, grade, _ in rows] == [3, 0, 2, 1, 3]
        # The browser measured visible time for every judgment.
        assert all(active_ms > 0 for _, _, active_ms in rows)
        changes = db.session.execute(
            sa.select(JudgmentEvent.old_grade, JudgmentEvent.new_grade)
            .where(JudgmentEvent.annotator_id == admin.id, JudgmentEvent.new_status == "graded")
            .order_by(JudgmentEvent.id)
        ).all()
        assert changes == [(None, 3), (None, 0), (None, 2), (None, 1), (None, 2), (2, 3)]


def _login(page, base: str) -> None:
    page.goto(base + "/login")
    page.fill("#username", "admin")
    page.fill("#password", ADMIN_PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(base + "/")


def _answers(app) -> list[tuple[str, str, int | None, str]]:
    with app.app_context():
        return [
            tuple(row)
            for row in db.session.execute(
                sa.select(Chunk.docid, Judgment.status, Judgment.grade, Judgment.note)
                .join(Chunk, Chunk.id == Judgment.chunk_id)
                .order_by(Judgment.id)
            )
        ]


@pytest.mark.browser
def test_cant_tell_note_and_shortcuts_off(live_server: LiveServer, browser_page, artifacts):
    page = browser_page
    built = build(live_server.app, "Keys", pool={"q1": ["d1", "d2", "d3"]})
    _login(page, live_server.url)
    page.goto(f"{live_server.url}/test-sets/{built.test_set_id}/label")
    page.wait_for_url(PAIR_URL)
    first = page.url

    # `c` focuses the note; digits typed there are text, not grades; Enter sends "can't tell".
    page.keyboard.press("c")
    page.keyboard.type("is 2FA meant? 3 options")
    assert page.url == first
    answer_and_wait(page, "Enter")
    assert page.url != first  # the address follows the pair shown
    assert _answers(live_server.app) == [("d1", "cant_tell", None, "is 2FA meant? 3 options")]

    # Switched off, single keys do nothing; the mouse still grades.
    page.click("text=Turn single-key shortcuts off")
    page.wait_for_selector("[data-labeling][data-shortcuts=off]")
    second = page.url
    page.keyboard.press("2")
    page.wait_for_timeout(300)
    assert page.url == second and len(_answers(live_server.app)) == 1
    page.click("button[name=grade][value='1']")
    wait_saved(page)
    assert _answers(live_server.app)[-1] == ("d2", "graded", 1, "")

    page.goto(
        f"{live_server.url}/test-sets/{built.test_set_id}/queries/{built.queries['q1']}/review"
    )
    page.screenshot(path=str(artifacts / "review.png"), full_page=True)


@pytest.mark.browser
def test_grading_works_without_javascript(live_server: LiveServer, artifacts):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium to run the browser tests")
    from playwright.sync_api import sync_playwright

    built = build(live_server.app, "NoJS", pool={"q1": ["d1", "d2"]})
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        context = browser.new_context(java_script_enabled=False)
        page = context.new_page()
        try:
            _login(page, live_server.url)
            page.goto(f"{live_server.url}/test-sets/{built.test_set_id}/label")
            page.click("button[name=grade][value='3']")
            page.wait_for_url(PAIR_URL)
            second = page.url
            # A skipped pair comes back once nothing else is left: here, at once.
            page.click("button[value=skip]")
            page.wait_for_url(second)
            page.click("button[name=grade][value='0']")
            page.wait_for_url(re.compile(r".*/label$"))
            assert "Nothing left for you to label here" in page.content()
            page.screenshot(path=str(artifacts / "done-nojs.png"), full_page=True)
        finally:
            context.close()
            browser.close()
    assert _answers(live_server.app) == [("d1", "graded", 3, ""), ("d2", "graded", 0, "")]
