"""The compare page's decision figures in a real browser: what to label next, the labels
remaining before robust, and the queries a paired test needs."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from scipy import stats

from tests.browser.live import LiveServer, log_in
from tests.factory import A3, B3, build_dashboard


def _power_n(effect: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """The smallest n whose two-sided paired t-test reaches `power` (scipy, brute force)."""
    n = np.arange(2, 40_000)
    critical = stats.t.isf(alpha / 2, n - 1)
    shift = abs(effect) * np.sqrt(n) / sd
    reached = stats.nct.sf(critical, n - 1, shift) + stats.nct.cdf(-critical, n - 1, shift)
    return int(n[np.argmax(reached >= power)])


@pytest.mark.browser
def test_compare_page_shows_what_to_label_next(live_server: LiveServer, browser_page) -> None:
    page, base = browser_page, live_server.url
    demo = build_dashboard(live_server.app)
    log_in(page, base)
    page.goto(base + demo.url(f"/compare/?run={demo.run_a}&run={demo.run_b}&k=3"))

    # The ordered pairs: weights 3 × |1/log2(rank A + 1) − 1/log2(rank B + 1)| in the top 3:
    # f2 (A rank 1) and a (A rank 1): 3 × 1; ghost (B rank 3): 3 × 1/log2(4) = 1.5.
    texts = page.locator("#next-table tbody tr").all_inner_texts()
    # ghost is in no corpus: its row says so beside the docid.
    assert [t.replace(" not in the corpus", "").split()[:3] for t in texts] == [
        ["q3", "f2", "3.0000"],
        ["q4", "a", "3.0000"],
        ["q2", "ghost", "1.5000"],
    ]
    assert "ghost not in the corpus" in texts[2]
    # y is at A's rank 4: 3 / log2(5) once the depth (= k) reaches it.
    page.goto(base + demo.url(f"/compare/?run={demo.run_a}&run={demo.run_b}&k=4"))
    texts = page.locator("#next-table tbody tr").all_inner_texts()
    assert [t.replace(" not in the corpus", "").split()[:3] for t in texts] == [
        ["q3", "f2", "3.0000"],
        ["q4", "a", "3.0000"],
        ["q2", "ghost", "1.5000"],
        ["q1", "y", "1.2920"],  # 3 / log2(5)
    ]

    remaining = page.locator("#labels-remaining").inner_text()
    assert "Robust:" in remaining and "0 labels remaining" in remaining

    # The sample-size sentence, against a brute-force scipy search on the hand NDCG@3 values.
    page.goto(base + demo.url(f"/compare/?run={demo.run_a}&run={demo.run_b}&k=3"))
    d = [B3[q] - A3[q] for q in ("q1", "q2", "q3", "q5")]
    observed, at_002 = (
        _power_n(statistics.fmean(d), statistics.stdev(d)),
        _power_n(0.02, statistics.stdev(d)),
    )
    sentence = " ".join(page.locator("#sample-size").inner_text().split())
    assert f"needs {observed} queries to detect a difference of the observed size" in sentence
    assert f"with 80% power, and {at_002} to detect a difference of 0.02" in sentence

    # The JSON export behind the link lists the same pairs, best first.
    href = page.get_by_role("link", name="JSON").last.get_attribute("href")
    listed = page.request.get(base + href).json()
    assert [(p["qid"], p["docid"]) for p in listed] == [("q3", "f2"), ("q4", "a"), ("q2", "ghost")]

    # Admins add them to the queue, in that order (ghost has no text: it cannot be queued).
    page.get_by_role(
        "button", name="Add these 3 pairs to the labeling queue, in this order"
    ).click()
    page.wait_for_load_state()
    assert "Queued 2 new pairs" in page.locator("body").inner_text()
    assert "(1 not in the corpus)" in page.locator("body").inner_text()
