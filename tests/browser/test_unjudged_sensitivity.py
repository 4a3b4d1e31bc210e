"""In the browser: the run table shows the sensitivity to unjudged chunks, the compare page
whether the winner rests on them.

One query, k = 2, scale 0-3, judged a = 3 and b = 1 (L3 = log2(3)). A ranks a, b (1.0 today,
nothing unjudged); B ranks u1, u2 (0 today). If u1 and u2 had grade 3 the ideal is 3, 3, 3, 1:
A = (3 + 1/L3) / (3 + 3/L3) = 0.742 and B = 1, so the winner flips on 2 unjudged pairs. C ranks
b, u1: today 1 / (3 + 1/L3) = 0.275, with u1 at 3: (1 + 3/L3) / (3 + 3/L3) = 0.591 below A's
0.742, so A's win over C is robust (1 pair). C's own values: 0.591 if unjudged were top (its
ideal 3, 3, 1), condensed b alone 1 / (3 + 1/L3) = 0.275.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest

from ndcg_labeler.extensions import db
from ndcg_labeler.services import runs as run_service
from tests.browser.live import LiveServer, log_in
from tests.factory import build_test_set

L3 = math.log2(3)
RUNS = {
    "A": "q1 Q0 a 1 2.0 s\nq1 Q0 b 2 1.0 s\n",
    "B": "q1 Q0 u1 1 2.0 s\nq1 Q0 u2 2 1.0 s\n",
    "C": "q1 Q0 b 1 2.0 s\nq1 Q0 u1 2 1.0 s\n",
}
C_TOP = (1 + 3 / L3) / (3 + 3 / L3)
C_CONDENSED = 1 / (3 + 1 / L3)


@pytest.mark.browser
def test_run_table_and_compare_page_show_the_sensitivity(
    live_server: LiveServer, browser_page, artifacts: Path
) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    with app.app_context():
        qrels = [("q1", "a", 3), ("q1", "b", 1)]
        test_set = build_test_set("Flips", {"q1": "parental leave"}, qrels)
        test_set_id = test_set.id
        ids = {
            name: run_service.upload_run(
                test_set, io.BytesIO(text.encode()), f"{name}.trec", name, None
            ).id
            for name, text in RUNS.items()
        }
        db.session.remove()
    log_in(page, base)
    dash = f"{base}/test-sets/{test_set_id}/dashboard"

    page.goto(f"{dash}/runs/{ids['C']}?k=2")
    row = page.locator("#query-table tbody tr[data-qid=q1]")
    assert row.locator("td.if-top").inner_text() == f"{C_TOP:.4f}"
    assert row.locator("td.condensed").inner_text() == f"{C_CONDENSED:.4f}"
    mean = page.locator("#mean-sensitivity .sensitivity")
    assert mean.inner_text() == f"({C_TOP:.3f} if unjudged were top; condensed {C_CONDENSED:.3f})"
    assert "Sensitivity to unjudged chunks" in (mean.get_attribute("title") or "")
    page.screenshot(path=str(artifacts / "sensitivity-run-table.png"), full_page=True)

    page.goto(f"{dash}/compare/?run={ids['A']}&run={ids['B']}&run={ids['C']}&k=2")
    flip = page.locator('#robustness p[data-pair="A|B"]')
    assert flip.get_attribute("data-robust") == "false"
    text = " ".join(flip.inner_text().split())
    assert text.startswith("Not robust: A wins (B against A) today, but B wins if the 2 unjudged")
    assert "had grade 3" in text
    robust = page.locator('#robustness p[data-pair="A|C"]')
    assert robust.get_attribute("data-robust") == "true"
    assert " ".join(robust.inner_text().split()).startswith(
        "Robust: A wins (C against A), and still would if the 1 unjudged (query, chunk) pair"
    )
    deltas = page.locator("#deltas-table tbody tr[data-qid=q1]").inner_text()
    assert "(1.000 if unjudged were top; condensed 0.000)" in deltas  # B's own values
    page.screenshot(path=str(artifacts / "sensitivity-compare.png"), full_page=True)
