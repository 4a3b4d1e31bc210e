"""From uploading a run to grading in a query's drill-down, in the browser, without reloads."""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, TestSet, User
from ndcg_labeler.services.comparison import compare as comparison
from ndcg_labeler.services.comparison import stats as comparison_stats
from tests.browser.live import ADMIN_PASSWORD, LiveServer, log_in
from tests.factory import build_dashboard, build_test_set, grade

L3 = math.log2(3)
QUERIES = {"q1": "parental leave policy", "q2": "expense reports", "q3": "dress code"}
CORPUS = {d: f"Chunk {d} of the handbook." for d in ("a", "b", "c", "e", "u", "v", "w", "z")}
QRELS = [("q1", "a", 3), ("q1", "b", 1), ("q2", "e", 2), ("q3", "c", 2)]
# q1: b 1, u ?, a 3 → DCG 1 + 3/2 = 2.5 of 3 + 1/log2 3 (gap 1.13)
# q3: w ?, c 2 → DCG 2/log2 3 of 2 (gap 0.74);  q2: e 2 → perfect (gap 0).
RUN = "".join(
    f"{qid} Q0 {docid} {rank} {10 - rank} bm25\n"
    for qid, docids in {"q1": ["b", "u", "a"], "q2": ["e", "v"], "q3": ["w", "c"]}.items()
    for rank, docid in enumerate(docids, start=1)
)


def _ndcg(page) -> float:
    return float(page.locator("#query-ndcg").get_attribute("data-ndcg"))


def _wait_ndcg_change(page, old: float, timeout: int) -> None:
    page.wait_for_function(
        "old => { const el = document.querySelector('#query-ndcg');"
        " return el && el.dataset.ndcg !== ''"
        " && Math.abs(parseFloat(el.dataset.ndcg) - old) > 1e-6; }",
        arg=old,
        timeout=timeout,
    )


@pytest.mark.browser
def test_upload_then_table_then_grade_in_the_drill_down(
    live_server: LiveServer, browser_page, artifacts: Path, tmp_path: Path
) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    with app.app_context():
        test_set_id = build_test_set("Handbook", QUERIES, QRELS, CORPUS).id
        db.session.remove()
    run_file = tmp_path / "bm25.trec"
    run_file.write_text(RUN)

    page.goto(base + "/login")
    page.fill("#username", "admin")
    page.fill("#password", ADMIN_PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(base + "/")

    # Upload the run through the upload page (XHR with a progress bar, then a redirect).
    page.goto(f"{base}/test-sets/{test_set_id}/runs/upload")
    page.set_input_files("#file", str(run_file))
    page.fill("#name", "bm25")
    page.click("input[type=submit][value='Upload run']")
    page.wait_for_url(re.compile(rf".*/test-sets/{test_set_id}/runs/\d+$"))

    # The dashboard lists the run; its query table puts the largest gap first.
    page.click("nav.subnav >> text=Dashboard")
    page.wait_for_url(re.compile(r".*/dashboard/$"))
    # Its mean carries the 95% t interval over its 3 queries (scipy's, as an oracle).
    per_query = [2.5 / (3 + 1 / L3), 1.0, (2 / L3) / 2]
    low, high = stats.t.interval(0.95, 2, loc=sum(per_query) / 3, scale=stats.sem(per_query))
    interval = page.locator("#live-scores .ci").first
    assert interval.inner_text().startswith(f"[{low:.4f}, {high:.4f}] n=3")
    assert interval.get_attribute("title") == (
        f"95% t interval {low:.4f} to {high:.4f} over 3 queries"
    )
    page.click("#live-scores table >> text=bm25")
    page.wait_for_selector("#query-table")
    order = page.locator("#query-table tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.qid)"
    )
    assert order == ["q1", "q3", "q2"]
    gaps = page.locator("#query-table tbody tr td:nth-child(6)").all_inner_texts()
    assert gaps == [f"{3 + 1 / L3 - 2.5:.4f}", f"{2 - 2 / L3:.4f}", "0.0000"]

    # Drill down into q1; mark the window so that any navigation would be noticed.
    page.click("#query-table >> text=q1")
    page.wait_for_selector("#ranked-table")
    page.evaluate("window.__dashboardMarker = 'still here'")
    before = _ndcg(page)
    assert before == pytest.approx(2.5 / (3 + 1 / L3), abs=1e-6)
    unjudged = page.locator("#ranked-table tr.unjudged")
    assert unjudged.count() == 1 and unjudged.get_attribute("data-docid") == "u"
    page.screenshot(path=str(artifacts / "dashboard-drilldown-before.png"), full_page=True)

    # Grade u "3" in place: htmx swaps the scores, no page load.
    unjudged.locator("button[name=grade][value='3']").click()
    _wait_ndcg_change(page, before, timeout=5000)
    after = _ndcg(page)
    assert after == pytest.approx((1 + 3 / L3 + 1.5) / (3 + 3 / L3 + 0.5), abs=1e-6)
    assert page.evaluate("window.__dashboardMarker") == "still here"
    assert page.locator("#ranked-table tr.unjudged").count() == 0
    with app.app_context():
        admin = db.session.scalar(sa.select(User).where(User.username == "admin"))
        saved = db.session.execute(
            sa.select(Chunk.docid, Judgment.grade)
            .join(Chunk, Chunk.id == Judgment.chunk_id)
            .where(Judgment.annotator_id == admin.id)
        ).all()
        assert [tuple(r) for r in saved] == [("u", 3)]

    # Someone else grades elsewhere (another process would do the same through the DB): the
    # open drill-down notices through its 1-second poll and updates within 2 seconds.
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        grade(test_set, "q1", "z", 3, "maria")  # a better chunk the run never retrieved
        db.session.remove()
    _wait_ndcg_change(page, after, timeout=2500)
    assert _ndcg(page) == pytest.approx(
        (1 + 3 / L3 + 1.5) / (3 + 3 / L3 + 3 / 2 + 1 / math.log2(5)), abs=1e-6
    )
    assert page.evaluate("window.__dashboardMarker") == "still here"
    page.screenshot(path=str(artifacts / "dashboard-drilldown-after.png"), full_page=True)


@pytest.mark.browser
def test_a_big_comparisons_statistics_arrive_without_a_reload(
    live_server: LiveServer, browser_page, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above INLINE_MAX_VALUES values (queries × runs) the page shows means and deltas at once;
    the intervals and tests are computed in the background and swapped in by the fragment's
    polling."""
    page, base, app = browser_page, live_server.url, live_server.app
    demo = build_dashboard(app)
    monkeypatch.setattr(comparison, "INLINE_MAX_VALUES", 0)  # every comparison counts as big
    # ... for the page too: what to label next comes in its own fragment.
    monkeypatch.setattr(comparison, "PAGE_INLINE_MAX_VALUES", 0)
    original = comparison_stats._compute

    def slow(*args, **kwargs):
        time.sleep(2.5)  # seconds of bootstrap at 7,000 queries
        return original(*args, **kwargs)

    monkeypatch.setattr(comparison_stats, "_compute", slow)
    asked: list[int] = []
    page.on("response", lambda r: asked.append(r.status) if "/compare/_stats" in r.url else None)
    log_in(page, base)
    page.goto(base + demo.url(f"/compare/?run={demo.run_a}&run={demo.run_b}&k=3"))
    tests = page.locator("#tests-table tbody tr").first
    assert "computing…" in tests.inner_text()
    page.locator("#compare-stats").evaluate("el => { window.__same_page = true; }")
    page.wait_for_function(
        "() => !document.querySelector('#compare-stats').textContent.includes('computing')",
        timeout=15_000,
    )
    cells = tests.locator("td.p-value").all_inner_texts()
    assert len(cells) == 2 and all(c.strip() not in ("", "computing…") for c in cells)
    assert page.evaluate("window.__same_page") is True  # swapped in, no reload
    # What to label next, left to its own fragment on a big comparison, arrives the same way.
    page.locator("#next-table").wait_for(timeout=15_000)
    assert page.locator("#next-table tbody tr").count() >= 1
    assert page.evaluate("window.__same_page") is True
    # It asked about once a second while computing (not in a busy loop), then got the figures.
    assert asked[-1] == 200 and set(asked[:-1]) <= {202} and 2 <= len(asked) <= 6
