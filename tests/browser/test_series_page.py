"""The series page in a real browser: the trend chart, a scheduled evaluation's alert, and a
chart point that opens its comparison (a fake search service and webhook on 127.0.0.1)."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime

import pytest

from ndcg_labeler.extensions import db
from ndcg_labeler.services import endpoints, series
from ndcg_labeler.services import runs as run_service
from tests.browser.live import ADMIN_PASSWORD, LiveServer
from tests.factory import build_test_set
from tests.series.helpers import CORPUS, GOOD, QRELS, QUERIES, WORSE, trec
from tests.series.servers import FakeSearch, Webhook


@pytest.mark.browser
def test_series_page_shows_the_chart_and_the_alert(live_server: LiveServer, browser_page) -> None:
    page, base, app = browser_page, live_server.url, live_server.app
    search, webhook = FakeSearch(), Webhook()
    try:
        app.config["NDCG_ALERT_WEBHOOK_URL"] = webhook.url
        with app.app_context():
            test_set = build_test_set("Nightly", QUERIES, QRELS, CORPUS)
            test_set_id = test_set.id
            for name in ("n1", "n2"):
                stream = io.BytesIO(trec(GOOD).encode())
                run_service.upload_run(test_set, stream, "r.trec", name, None, series="nightly")
            endpoints.add_endpoint(
                test_set, "live", search.url + "/?q={query}", hits="@", id_expr="id", score="score"
            )
            search.ranks = list(WORSE)
            slot = datetime(2026, 11, 26, 3, 0, tzinfo=UTC)
            check = series.evaluate(test_set, series.Due(test_set_id, "live", "nightly", 10, slot))
            assert (check.outcome, check.alert) == ("fail", "sent")
            db.session.remove()
    finally:
        search.stop()
        webhook.stop()
    assert len(webhook.received) == 1

    page.goto(base + "/login")
    page.fill("#username", "admin")
    page.fill("#password", ADMIN_PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(base + "/")
    page.goto(f"{base}/test-sets/{test_set_id}/runs/")
    page.click("text=Series and trends")
    page.click("a:text-is('nightly')")
    page.wait_for_url(re.compile(rf".*/test-sets/{test_set_id}/series/nightly$"))
    alert = page.locator("#series-alert")
    assert alert.is_visible()
    assert "Alert: fail" in alert.inner_text() and "nightly-2026-11-26-0300" in alert.inner_text()
    chart = page.locator("svg.chart-svg")
    assert chart.is_visible()
    assert chart.locator("circle.dot").count() == 3
    assert chart.locator("circle.change.down").count() == 1  # the fetched run's drop
    chart.locator("a circle.dot").last.click()
    page.wait_for_url(
        re.compile(rf".*/test-sets/{test_set_id}/dashboard/compare/\?run=\d+&run=\d+")
    )
    assert "nightly-2026-11-26-0300" in page.locator("main").inner_text()
