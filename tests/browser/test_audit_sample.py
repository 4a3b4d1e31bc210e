"""A judge's audit sample in the browser: draw it on the calibration page, then extend it."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from ndcg_labeler.extensions import db
from ndcg_labeler.services import judges
from ndcg_labeler.services.imports import ImportFile, import_files
from tests.browser.live import LiveServer, log_in
from tests.factory import build_test_set, trec

QUERIES = {f"q{i}": f"question {i}" for i in range(1, 9)}
# Every query but q8 has pool pairs; q1..q7's first chunk has an imported qrel, the second
# only for q1..q3: so q1, q2 and q3 are audited and q8 has "no pool pairs yet".
POOL = {f"q{i}": [f"a{i}", f"b{i}"] for i in range(1, 8)}
QRELS = [(f"q{i}", f"a{i}", 1) for i in range(1, 8)] + [(f"q{i}", f"b{i}", 0) for i in (1, 2, 3)]


def numpy_order(seed: int) -> list[str]:
    """The documented draw, straight from NumPy: the qids in byte order, permuted."""
    ordered = np.array(sorted(QUERIES, key=lambda qid: qid.encode()))
    return [str(qid) for qid in np.random.default_rng(seed).permutation(ordered)]


def _status(qid: str) -> str:
    if qid in ("q1", "q2", "q3"):
        return "audited"
    return "no pool pairs yet" if qid == "q8" else "not yet"


@pytest.mark.browser
def test_an_admin_draws_and_extends_the_sample(live_server: LiveServer, browser_page) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    with app.app_context():
        test_set = build_test_set("Audit", QUERIES, QRELS)
        import_files(test_set, pool=ImportFile(io.BytesIO(trec(POOL)), "pool.trec"))
        judge = judges.add_judge("gpt", "http://127.0.0.1:9/v1", "none")
        url = f"{base}/test-sets/{test_set.id}/judges/{judge.id}"
        db.session.remove()
    log_in(page, base)

    page.goto(url)
    section = page.locator("section[aria-labelledby=audit-heading]")
    assert "No sample drawn yet." in section.inner_text()
    assert "mean over all 8 of the test set's queries of NDCG@k" in section.inner_text()
    page.fill("#audit-queries", "4")
    page.fill("#audit-seed", "4")
    page.click("input[type=submit][value='Draw sample']")
    page.wait_for_url(re.compile(r".*#audit-heading$"))
    order = numpy_order(4)
    assert page.locator("#audit-sample-seed").inner_text() == "4"
    rows = page.locator("#audit-sample tbody tr")
    assert rows.count() == 4
    cells = [
        (r.locator("th").inner_text(), r.locator("td").nth(1).inner_text()) for r in rows.all()
    ]
    assert cells == [(qid, _status(qid)) for qid in order[:4]]
    audited = sum(_status(qid) == "audited" for qid in order[:4])
    assert page.locator("#audit-sample-status").inner_text() == f"{audited} of 4 audited"

    # A bigger N, no seed: the same four first, then the next two of the same draw.
    page.fill("#audit-queries", "6")
    page.click("input[type=submit][value='Draw sample']")
    page.wait_for_url(re.compile(r".*#audit-heading$"))
    rows = page.locator("#audit-sample tbody tr")
    assert [r.locator("th").inner_text() for r in rows.all()] == order[:6]
    assert page.locator("#audit-sample-seed").inner_text() == "4"

    # Another seed without "draw a new sample" is refused next to the form, nothing changes.
    page.fill("#audit-seed", "5")
    page.click("input[type=submit][value='Draw sample']")
    summary = page.locator("section[aria-labelledby=audit-heading] .error-summary")
    summary.wait_for()
    assert "drawn with seed 4" in summary.inner_text()
    assert page.locator("#audit-sample tbody tr").count() == 6
