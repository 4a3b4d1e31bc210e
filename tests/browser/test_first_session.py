"""The first session of docs/user-guide/first-session.md, walked in the browser from an app with
nothing but its first admin: create a test set, import queries and a corpus, upload two runs,
pool them from the checklist, label every pair, read the dashboard. At every step the page
shows the next one (no dead end), and the walk only follows what the pages offer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser.live import LiveServer, answer_and_wait, log_in

QUERIES = "q1\treset my password\nq2\tvpn drops every hour\nq3\tprinter jams on tray 2\n"
CORPUS = (
    "docid,text\n"
    "d1,Reset a password from the account page.\n"
    "d2,Passwords expire every 90 days.\n"
    "d3,The VPN client reconnects after an hour.\n"
    "d4,Update the VPN client to stop drops.\n"
    "d5,Clear a paper jam from tray 2.\n"
    "d6,Printers need toner.\n"
)
RUN_A = "q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\nq2 Q0 d3 1 3.0 a\nq3 Q0 d6 1 1.0 a\n"
RUN_B = "q1 Q0 d2 1 3.0 b\nq2 Q0 d4 1 3.0 b\nq2 Q0 d3 2 2.0 b\nq3 Q0 d5 1 2.0 b\n"
POOLED = 6  # the distinct (query, chunk) pairs in the two runs' top 10


def _next_action(page) -> str:
    """The checklist's one next action on the test set's page."""
    return page.locator("#next-action").inner_text()


@pytest.mark.browser
def test_the_first_session_has_no_dead_end(
    live_server: LiveServer, browser_page, tmp_path: Path
) -> None:
    page, base = browser_page, live_server.url
    files = {}
    for name, text in (("queries.tsv", QUERIES), ("corpus.csv", CORPUS), ("A.trec", RUN_A),
                       ("B.trec", RUN_B)):  # fmt: skip
        files[name] = tmp_path / name
        files[name].write_text(text)

    # 1. Start: the first admin logs in.
    log_in(page, base)

    # 2. Create a test set; its import page opens.
    page.click("text=New test set")
    page.fill("#name", "Helpdesk")
    page.select_option("#scale", "3")
    page.click("input[type=submit][value='Create test set']")
    page.wait_for_url(re.compile(r".*/test-sets/\d+/import$"))
    test_set_url = page.url.removesuffix("/import")
    page.set_input_files("#queries", str(files["queries.tsv"]))
    page.set_input_files("#corpus", str(files["corpus.csv"]))
    page.click("input[type=submit][value='Import']")
    page.wait_for_selector(".import-report")
    page.click("text=Back to the test set")
    page.wait_for_url(test_set_url)
    # Queries and corpus are in: the next step is a run.
    assert _next_action(page) == "Upload a run (or import a pool or qrels)"

    # 4. Upload two runs: the first from the checklist, the second from the Runs page.
    for name in ("A", "B"):
        page.goto(test_set_url)
        if name == "A":
            page.click("#next-action")
        else:
            page.click("nav.subnav a:has-text('Runs')")
            page.click("text=Upload a run")
        page.wait_for_url(re.compile(r".*/runs/upload$"))
        page.set_input_files("#file", str(files[f"{name}.trec"]))
        page.fill("#name", name)
        page.click("input[type=submit][value='Upload run']")
        page.wait_for_url(re.compile(r".*/runs/\d+$"))

    # The checklist pools the two runs' top 10 in one press.
    page.goto(test_set_url)
    assert _next_action(page) == f"Pool the top 10 of your 2 runs: {POOLED} pairs"
    page.click("#next-action")
    page.wait_for_url(re.compile(r".*/dashboard/pool/.*"))
    assert f"Added {POOLED} pairs to the labeling queue" in page.locator(".flashes").inner_text()

    # 3. Label: the next action starts the queue; a digit grades and shows the next pair.
    page.goto(test_set_url)
    assert _next_action(page).startswith("Start labeling")
    page.click("#next-action")
    page.wait_for_url(re.compile(r".*/label/\d+.*"))
    for key in ("3", "1", "2", "0", "3"):
        answer_and_wait(page, key)
    page.keyboard.press("1")
    page.wait_for_selector("h1:has-text('Nothing left for you to label here')")

    # 5. Everything is labeled: the next action compares the two runs, and the dashboard
    # opens a run's queries, largest gap first, then a query's observed and ideal top k.
    page.goto(test_set_url)
    assert _next_action(page) == "Compare your 2 runs"
    page.click("#next-action")
    page.wait_for_url(re.compile(r".*/dashboard/compare.*"))
    assert "Robust: A wins" in page.locator("main").inner_text()
    page.click("nav.subnav a:has-text('Dashboard')")
    page.wait_for_url(re.compile(r".*/dashboard/$"))
    page.click("main a[href*='/dashboard/runs/']:text-is('A')")
    page.wait_for_url(re.compile(r".*/dashboard/runs/\d+$"))
    page.locator("main table a[href*='/queries/']").first.click()
    page.wait_for_url(re.compile(r".*/dashboard/runs/\d+/queries/\d+/$"))
    assert "ideal" in page.locator("main").inner_text().lower()
