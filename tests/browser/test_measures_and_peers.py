"""One walk through the gaps of issue 32: a "More columns" measure on the runs page, a Quepid
judgments CSV imported through the peer form, and the Quepid export downloaded; axe on both
pages."""

from __future__ import annotations

import csv
import io

import pytest

from ndcg_labeler.extensions import db
from ndcg_labeler.services import runs as run_service
from tests.browser.a11y import AXE, check_page
from tests.browser.live import LiveServer, log_in
from tests.factory import build_test_set

QUERIES = {"q1": "reset my password", "q2": "vpn drops"}
QRELS = [("q1", "d1", 3), ("q1", "d2", 1), ("q2", "d3", 2), ("q2", "d4", 0)]
# q1 ranks d2 (1), d1 (3); q2 ranks d4 (0), d3 (2).
RUN = b"q1 Q0 d2 1 2.0 s\nq1 Q0 d1 2 1.0 s\nq2 Q0 d4 1 2.0 s\nq2 Q0 d3 2 1.0 s\n"
QUEPID = "query,docid,rating\nreset my password,d5,2\nprinter jams,d6,3\n"


@pytest.mark.browser
def test_more_columns_a_quepid_import_and_its_export(live_server: LiveServer, browser_page) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    with app.app_context():
        test_set = build_test_set("Desk", QUERIES, QRELS)
        run_service.upload_run(test_set, io.BytesIO(RUN), "r.trec", "bm25", None)
        set_id = test_set.id
        db.session.remove()
    page.context.add_init_script(path=str(AXE))  # for the axe checks
    log_in(page, base)

    page.goto(f"{base}/test-sets/{set_id}/runs/")
    more = page.locator("form[aria-label='More columns']")
    more.locator("input[name=measure]").fill("P(rel=2)@5, bpref")
    more.get_by_role("button", name="Show").click()
    page.wait_for_url("**measure=**")
    table = page.locator("table").first
    assert table.locator("th", has_text="Mean P(rel=2)@5").count() == 1
    assert table.locator("th", has_text="Mean bpref").count() == 1
    # By hand: P(rel=2)@5 is 1/5 on both queries (d1, d3 have grade ≥ 2): mean 0.2.
    # bpref: q1 has R=2 (d1, d2), no judged non-relevant above either: 1; q2 has R=1 (d3),
    # one judged non-relevant (d4) above it: 1 − min(1, 1)/min(1, 1) = 0. Mean 0.5.
    row = table.locator("tbody tr", has_text="bm25").inner_text()
    assert "0.2000" in row and "0.5000" in row
    finding = check_page(page, page.url, "runs.index")
    assert not finding.violations and not finding.problems, finding

    page.goto(f"{base}/test-sets/{set_id}/import")
    page.select_option("#peer-fmt", "quepid")
    page.set_input_files(
        "#peer-file", {"name": "case.csv", "mimeType": "text/csv", "buffer": QUEPID.encode()}
    )
    page.get_by_role("button", name="Import peer data").click()
    report = page.locator(".import-report, [role=status]").first.inner_text()
    assert "queries: 1 created" in report
    assert "judgments of source 'case.csv': 2 created" in report
    finding = check_page(page, page.url, "testsets.import_peer")
    assert not finding.violations and not finding.problems, finding

    with page.expect_download() as download:
        page.get_by_role("link", name="Quepid judgments (CSV)").click()
    body = download.value.path().read_text(encoding="utf-8")
    rows = {tuple(r) for r in csv.reader(io.StringIO(body))}
    assert ("query", "docid", "rating") in rows
    assert {("reset my password", "d1", "3"), ("reset my password", "d5", "2")} <= rows
    assert ("printer jams", "d6", "3") in rows
