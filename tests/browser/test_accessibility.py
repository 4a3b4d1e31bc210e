"""Accessibility in a real browser: every page a walk reaches, as admin and as annotator, has no
serious or critical axe-core violation and does not scroll sideways at 390 px or at 200% zoom;
the drill-down's "Skip to grades" link comes first and lands on a grade button."""

from __future__ import annotations

import io

import pytest

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import endpoints, judges, pooling, testsets
from ndcg_labeler.services import runs as run_service
from tests.browser.a11y import walk
from tests.browser.live import LiveServer, log_in
from tests.factory import PASSWORD, build_test_set, judge, make_user, trec
from tests.judges.fake_llm import FakeLLM

# The fake judge reads its grade from a marker in the passage (tests/judges/fake_llm.py).
QUERIES = {
    "q1": "parental leave policy",
    "q2": "expense reports",
    "q3": "dress code",
    "q4": "holiday carry-over",
}
CORPUS = {
    "a": "ANSWER3 Parental leave lasts sixteen weeks.",
    "b": "ANSWER1 Leave requests go to your manager.",
    "c": "ANSWER0 The canteen opens at noon.",
    "e": "ANSWER2 Expense reports are due monthly.",
    "f": "ANSWER1 Receipts are scanned.",
    "g": "ANSWER2 Jeans are fine on Fridays.",
    "h": "GARBAGE a poem about ties",
    "i": "ANSWER3 Five days carry over.",
}
QRELS = [("q1", "a", 3), ("q2", "e", 2), ("q3", "g", 2)]
RUN_A = {"q1": ["a", "b", "c"], "q2": ["e", "f"], "q3": ["h", "g"], "q4": ["i", "c"]}
RUN_B = {"q1": ["c", "a"], "q2": ["f", "e"], "q3": ["g"], "q4": ["c", "i"]}
# (qid, docid, alice, bob): the two annotators disagree on q1/b and q4/i.
TWO_PEOPLE = [("q1", "b", 1, 3), ("q1", "c", 0, 0), ("q2", "f", 1, 1), ("q4", "i", 3, 1)]
# The pages with content that a walk must have reached, by who walks (annotators see no admin
# pages; alice is a member of the test set).
EVERYONE = {
    "main.index",
    "testsets.show",
    "testsets.queries",
    "runs.index",
    "dashboard.overview",
    "dashboard.run_table",
    "drilldown.page",
    "compare.page",
    "gate.page",
    "team.agreement_page",
    "team.people_page",
    "team.policies_page",
    "labeling.pair",
    "series.show",
}
MUST_REACH = {
    "admin": EVERYONE
    | {
        "judges.calibration",
        "team.review_pair",
        "testsets.annotators",
        "testsets.settings",
        "endpoints.show",
        "users.index",
        "audit.index",
        "pooling.page",
    },
    "alice": EVERYONE,
}


def build_everything(app, llm: FakeLLM) -> int:
    """One test set with content on every page: imported qrels, two runs, a pool, two
    annotators' grades (with disagreements), a machine judge's labels and a retriever
    endpoint; returns its id."""
    alice, bob = make_user(app, "alice"), make_user(app, "bob")
    with app.app_context():
        test_set = build_test_set("Handbook", QUERIES, QRELS, CORPUS)
        for name, ranking in (("A", RUN_A), ("B", RUN_B)):
            stream = io.BytesIO(trec(ranking))
            run_service.upload_run(test_set, stream, f"{name}.trec", name, None, series="nightly")
        runs = list(db.session.scalars(db.select(Run).where(Run.test_set_id == test_set.id)))
        pooling.add_pool(test_set, runs, 3)
        testsets.set_members(test_set, [alice, bob])
        test_set_id = test_set.id
        db.session.remove()
    for qid, docid, by_alice, by_bob in TWO_PEOPLE:
        judge(app, test_set_id, qid, docid, "alice", grade=by_alice)
        judge(app, test_set_id, qid, docid, "bob", grade=by_bob)
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        gpt = judges.add_judge("gpt", llm.url, "fake-model", timeout=5.0, concurrency=2)
        judges.run_judge(test_set, gpt, "all")
        # Never asked here (its page only shows the definition): port 9 is discard.
        endpoints.add_endpoint(
            test_set, "search", "http://127.0.0.1:9/search?q={query}", hits="hits", id_expr="id"
        )
        db.session.remove()
    return test_set_id


@pytest.fixture
def llm():
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.mark.browser
@pytest.mark.parametrize("who", ["admin", "alice"])
def test_every_page_passes_axe_and_reflows(
    live_server: LiveServer, browser_page, llm: FakeLLM, who: str
) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    build_everything(app, llm)
    if who == "admin":
        log_in(page, base)
    else:
        log_in(page, base, who, PASSWORD)
    seen = walk(page, base, app)
    print(f"{who}: {len(seen.pages)} pages: " + ", ".join(sorted(seen.pages)))
    assert not seen.findings and not seen.errors, "\n" + seen.report()
    # The walk really went everywhere (a broken crawler would pass on one page).
    assert MUST_REACH[who] <= set(seen.pages), MUST_REACH[who] - set(seen.pages)


@pytest.mark.browser
def test_the_menu_fits_one_line_and_opens_from_the_keyboard(
    live_server: LiveServer, browser_page, llm: FakeLLM
) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    test_set_id = build_everything(app, llm)
    log_in(page, base)
    page.goto(f"{base}/test-sets/{test_set_id}/queries")
    items = page.locator("nav.subnav > ul > li")
    tops = {round(box["y"]) for box in (items.nth(i).bounding_box() for i in range(items.count()))}
    # 6 links (Pooling for admins), 3 groups, on one line.
    assert items.count() == 9 and len(tops) == 1, (items.count(), tops)
    team = page.locator("nav.subnav summary", has_text="Team")
    assert not page.get_by_role("link", name="Agreement").is_visible()
    team.focus()
    page.keyboard.press("Enter")
    assert page.get_by_role("link", name="Agreement").is_visible()
    # Opening another group closes this one; Escape closes it and the focus stays on it.
    page.locator("nav.subnav summary", has_text="Setup").click()
    assert not page.get_by_role("link", name="Agreement").is_visible()
    assert page.get_by_role("link", name="Endpoints").is_visible()
    page.keyboard.press("Escape")
    assert not page.get_by_role("link", name="Endpoints").is_visible()
    assert page.evaluate("document.activeElement.textContent.trim()") == "Setup"
    # The group of the page shown is marked (its summary), and the page's link inside it.
    page.goto(f"{base}/test-sets/{test_set_id}/people")
    assert page.locator("nav.subnav summary.current").inner_text().startswith("Team")
    assert page.locator("nav.subnav a[aria-current=page]").text_content() == "People"


@pytest.mark.browser
def test_skip_to_grades_comes_first_and_lands_on_a_grade_button(
    live_server: LiveServer, browser_page, llm: FakeLLM
) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    test_set_id = build_everything(app, llm)
    log_in(page, base)
    # Run A on q3 ranks h (unjudged by people) first: the first grade button is h's "0".
    page.goto(f"{base}/test-sets/{test_set_id}/dashboard/runs/1/queries/3/")
    for _ in range(3):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "Skip to grades":
            break
    else:
        raise AssertionError("Skip to grades is not within 3 Tab presses")
    assert page.locator("a.skip-link:focus").is_visible()  # shown while focused
    page.keyboard.press("Enter")
    focused = page.evaluate(
        "(() => { const el = document.activeElement;"
        " return [el.tagName, el.value, el.closest('tr').dataset.docid]; })()"
    )
    assert focused == ["BUTTON", "0", "h"]
    # One more Tab reaches the next grade of the same chunk, not the page's top.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.value") == "1"


@pytest.mark.browser
def test_query_table_scrolls_in_its_box_with_the_qid_in_view(
    live_server: LiveServer, browser_page, llm: FakeLLM
) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    test_set_id = build_everything(app, llm)
    log_in(page, base)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{base}/test-sets/{test_set_id}/dashboard/runs/1")
    box = page.locator(".table-scroll:has(#query-table)")
    # Too wide for the phone: the box scrolls (and can be scrolled from the keyboard), the page
    # does not.
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    assert box.evaluate("b => b.scrollWidth > b.clientWidth")
    assert box.get_attribute("tabindex") == "0" and box.get_attribute("role") == "region"
    qid = page.locator("#query-table tbody th").first
    left = qid.bounding_box()["x"]
    box.evaluate("b => { b.scrollLeft = 300; }")
    assert box.evaluate("b => b.scrollLeft") > 0
    assert qid.bounding_box()["x"] == pytest.approx(left, abs=1)  # sticky: still in view
    ndcg = page.locator("#query-table tbody td.num").nth(2)  # DCG, IDCG, NDCG
    assert ndcg.bounding_box()["x"] + ndcg.bounding_box()["width"] <= 390
    # Links look like links: the qid is link-coloured and underlined, and so are sort headers.
    accent = page.evaluate(
        "getComputedStyle(document.documentElement).getPropertyValue('--accent').trim()"
    )
    assert accent == "#2956b2"
    for link in (
        page.locator("#query-table tbody th a").first,
        page.locator("#query-table thead a").first,
    ):
        style = link.evaluate(
            "a => { const s = getComputedStyle(a); return [s.color, s.textDecorationLine]; }"
        )
        assert style == ["rgb(41, 86, 178)", "underline"]
