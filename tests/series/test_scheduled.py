"""Scheduled evaluations: the tick claims a slot once, the job fetches into the series, gates
against the baseline and posts a Slack-compatible alert; a worker that was down runs a missed
schedule once when it returns. Offline: a fake search service and webhook on 127.0.0.1."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, RetrieverEndpoint, Run, SeriesCheck
from ndcg_labeler.services import endpoints, jobs, series, testsets
from tests.factory import build_test_set
from tests.series.helpers import CORPUS, GOOD, QRELS, QUERIES, WORSE
from tests.series.servers import FakeSearch, Webhook

DAY1 = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)


@pytest.fixture
def search() -> Iterator[FakeSearch]:
    server = FakeSearch()
    yield server
    server.stop()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    server = Webhook()
    yield server
    server.stop()


@pytest.fixture
def scheduled(app: Flask, search: FakeSearch, webhook: Webhook) -> Flask:
    """Test set 'sched' with endpoint 'live' scheduled daily at 03:00 into series 'nightly'."""
    app.config["NDCG_JOBS_IMMEDIATE"] = True  # a queued job runs in the tick's own call
    app.config["NDCG_ALERT_WEBHOOK_URL"] = webhook.url + "/hook"
    with app.app_context():
        test_set = build_test_set("sched", QUERIES, QRELS, CORPUS)
        endpoints.add_endpoint(
            test_set, "live", search.url + "/?q={query}", hits="@", id_expr="id", score="score"
        )
        series.set_schedule(test_set, "live", "daily 03:00", "nightly", k=10, now=DAY1)
        db.session.remove()
    return app


def _checks(app: Flask) -> list[tuple[str, str | None, str]]:
    with app.app_context():
        rows = db.session.execute(
            sa.select(SeriesCheck.outcome, Run.name, SeriesCheck.alert)
            .outerjoin(Run, Run.id == SeriesCheck.run_id)
            .order_by(SeriesCheck.id)
        ).all()
        return [tuple(row) for row in rows]


def test_a_missed_schedule_runs_once_gates_and_alerts(
    scheduled: Flask, search: FakeSearch, webhook: Webhook, as_admin: FlaskClient
) -> None:
    app = scheduled
    with app.app_context():
        assert jobs.tick(DAY1 + timedelta(minutes=30)) == []  # 02:30: nothing due yet
        first = jobs.tick(DAY1 + timedelta(hours=1, seconds=30))  # 03:00:30
        assert [j.state for j in first] == ["done"]
        assert jobs.tick(DAY1 + timedelta(hours=1, minutes=5)) == []  # the same slot: never twice
    assert _checks(app) == [("baseline", "nightly-2026-11-23-0300", "")]
    assert webhook.received == []  # the first run sets the baseline: nothing to alert

    # The search gets worse, and the worker is down for three days (slots of the 24th, 25th
    # and 26th missed). When it returns, one evaluation runs, for the latest slot only.
    search.ranks = list(WORSE)
    asked = search.asked
    with app.app_context():
        back = jobs.tick(datetime(2026, 11, 26, 10, 0, tzinfo=UTC))
        assert len(back) == 1 and back[0].params["slot"] == "2026-11-26T03:00:00+00:00"
        assert jobs.tick(datetime(2026, 11, 26, 10, 1, tzinfo=UTC)) == []
        endpoint = db.session.scalar(sa.select(RetrieverEndpoint))
        assert series.next_run(endpoint, datetime(2026, 11, 26, 10, 1, tzinfo=UTC)) == datetime(
            2026, 11, 27, 3, 0, tzinfo=UTC
        )
    assert search.asked - asked == len(QUERIES)  # one fetch, not three
    checks = _checks(app)
    assert checks[1] == ("fail", "nightly-2026-11-26-0300", "sent")
    (alert,) = webhook.received
    assert set(alert) == {"text"}
    assert "series 'nightly'" in alert["text"] and "is FAIL" in alert["text"]
    assert "against 'nightly-2026-11-23-0300'" in alert["text"]
    assert "ndcg_cut_10 1.0000 → 0.5655" in alert["text"]  # (3 × 1/log2(3) + 3 × 1/2) / 6

    # The last passing run stays the baseline (the failed one is not).
    with app.app_context():
        test_set = testsets.require_by_name("sched")
        base, why = series.baseline(test_set, "nightly")
        assert (base.name, why) == ("nightly-2026-11-23-0300", "last passing run")
        test_set_id = test_set.id
        # Without any passing check the fallback is the latest run not found failing.
        db.session.execute(sa.delete(SeriesCheck).where(SeriesCheck.outcome == "baseline"))
        db.session.commit()
        base, why = series.baseline(test_set, "nightly")
        assert base.name == "nightly-2026-11-23-0300" and why.startswith("latest run not found")
    page = as_admin.get(f"/test-sets/{test_set_id}/series/nightly").get_data(as_text=True)
    assert 'id="series-alert"' in page and "Alert: fail" in page and "Webhook: sent" in page


def test_a_failed_fetch_and_a_refusing_webhook_are_recorded(
    scheduled: Flask,
    search: FakeSearch,
    webhook: Webhook,
    runner: FlaskCliRunner,
    monkeypatch: pytest.MonkeyPatch,
    as_admin: FlaskClient,
) -> None:
    app = scheduled
    webhook.status = 500
    search.stop()  # nothing answers: every query fails after its retries
    monkeypatch.setattr("ndcg_labeler.services.endpoints.client.BACKOFF", 0.0)
    with app.app_context():
        (job,) = jobs.tick(DAY1 + timedelta(hours=1))
        assert job.state == "done" and job.result["outcome"] == "error"
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == 0
    ((outcome, run, alert),) = _checks(app)
    assert (outcome, run, alert) == ("error", None, "failed")
    # The job's page says what the evaluation found, not only that the job is done.
    html = as_admin.get(f"/jobs/{job.id}").get_data(as_text=True)
    assert "Scheduled evaluation: error" in html and "The fetch failed" in html
    assert "Alert: failed." in html and "/series/nightly" in html
    text = webhook.received[0]["text"]
    assert "could not connect" in text
    assert text.startswith("ndcg-labeler: series 'nightly' (live): ERROR, no run was stored.")
    # No advice a scheduled fetch cannot follow: it has no one to accept a partial run.
    assert "accept a run without them" not in text
    with app.app_context():
        check = db.session.scalar(sa.select(SeriesCheck))
        assert check.alert_error == "HTTP 500 INTERNAL SERVER ERROR"
    # The CLI sets and shows the schedule; --off removes it, and then nothing is ever due.
    both = runner.invoke(
        args=["endpoints", "schedule", "sched", "live", "--daily", "3:00", "--off"]
    )
    assert both.exit_code == 1 and "exactly one of" in both.output
    cron = runner.invoke(
        args=["endpoints", "schedule", "sched", "live", "--cron", "0 4 * * 1", "--series", "w"]
    )
    assert cron.exit_code == 0 and "runs 0 4 * * 1 (UTC) into series 'w'; next at" in cron.output
    off = runner.invoke(args=["endpoints", "schedule", "sched", "live", "--off"])
    assert off.exit_code == 0 and "no schedule now" in off.output
    ticked = runner.invoke(args=["jobs", "tick"])
    assert "No scheduled evaluation is due." in ticked.output


def test_the_worker_runs_a_missed_slot_when_it_starts(
    scheduled: Flask, tmp_path, webhook: Webhook
) -> None:
    """A real huey consumer: its scheduler queues the tick at start-up (then every minute)."""
    app = scheduled
    app.config["NDCG_JOBS_IMMEDIATE"] = False
    app.config["NDCG_JOBS_SQLITE"] = str(tmp_path / "queue.sqlite3")
    with app.app_context():
        # The worker was down since the 23rd: today's (real) latest slot is due.
        endpoint = db.session.scalar(sa.select(RetrieverEndpoint))
        endpoint.schedule_last_at = datetime.now(UTC) - timedelta(days=3)
        db.session.commit()
        db.session.remove()
    app.config["NDCG_JOBS_QUEUE"] = f"test-{uuid.uuid4().hex}"
    app.config["NDCG_SCHEDULER"] = True  # the tests' apps run without it
    worker = jobs.worker(app, threads=1)
    worker._set_signal_handlers = lambda: None  # pytest keeps its own SIGINT handler
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _checks(app):
            time.sleep(0.1)  # polling the database: the worker's threads do the work
    finally:
        worker.stop(graceful=True)
    checks = _checks(app)
    assert len(checks) == 1 and checks[0][0] == "baseline"
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Job)) == 1


def test_an_admin_sets_the_schedule_on_the_endpoint_page(
    scheduled: Flask, as_admin: FlaskClient
) -> None:
    with scheduled.app_context():
        test_set_id = testsets.require_by_name("sched").id
    url = f"/test-sets/{test_set_id}/endpoints/live"
    page = as_admin.get(url).get_data(as_text=True)
    assert "Runs <strong>daily 03:00</strong> (UTC) into series" in page
    form = {"schedule-schedule": "61 * * * *", "schedule-series": "weekly", "schedule-k": "50"}
    bad = as_admin.post(url, data={**form, "schedule-submit": "Save schedule"})
    assert bad.status_code == 200 and "must stay within 0–59" in bad.get_data(as_text=True)
    form["schedule-schedule"], form["schedule-series"] = "0 4 * * 1", ""
    unnamed = as_admin.post(url, data={**form, "schedule-submit": "Save schedule"})
    html = unnamed.get_data(as_text=True)
    assert 'id="schedule-series-error">a schedule needs the series its runs join<' in html
    assert "--series" not in html and 'id="schedule-schedule-error"' not in html
    form["schedule-series"] = "weekly"
    saved = as_admin.post(url, data={**form, "schedule-submit": "Save schedule"})
    assert saved.status_code == 302
    with scheduled.app_context():
        endpoint = db.session.scalar(sa.select(RetrieverEndpoint))
        assert (endpoint.schedule, endpoint.schedule_series, endpoint.schedule_k) == (
            "0 4 * * 1",
            "weekly",
            50,
        )


def test_a_schedule_that_never_fires_is_refused_and_a_stored_one_shows(
    scheduled: Flask, runner: FlaskCliRunner, as_admin: FlaskClient
) -> None:
    never = ["endpoints", "schedule", "sched", "live", "--cron", "0 0 30 2 *", "--series", "n"]
    refused = runner.invoke(args=never)
    assert refused.exit_code == 1 and "never runs" in refused.output
    assert refused.exception is None or isinstance(refused.exception, SystemExit)
    with scheduled.app_context():
        endpoint = db.session.scalar(sa.select(RetrieverEndpoint))
        assert endpoint.schedule == "daily 03:00"  # unchanged
        # One stored before the parser refused it: the pages say so instead of failing.
        endpoint.schedule, endpoint.schedule_series = "0 0 30 2 *", "nightly"
        db.session.commit()
        assert series.next_run(endpoint) is None
        test_set_id = endpoint.test_set_id
    page = as_admin.get(f"/test-sets/{test_set_id}/endpoints/live")
    assert page.status_code == 200 and "it never runs" in page.get_data(as_text=True)
    page = as_admin.get(f"/test-sets/{test_set_id}/series/nightly")
    assert page.status_code == 200 and "it never runs" in page.get_data(as_text=True)


def test_the_alert_leaves_the_top_of_the_series_page_once_a_check_passes(
    scheduled: Flask, search: FakeSearch, as_admin: FlaskClient
) -> None:
    app = scheduled
    with app.app_context():
        jobs.tick(DAY1 + timedelta(hours=1))  # the 23rd: the baseline
        search.ranks = list(WORSE)
        jobs.tick(DAY1 + timedelta(days=1, hours=1))  # the 24th: fail, alerted
        test_set_id = testsets.require_by_name("sched").id
    url = f"/test-sets/{test_set_id}/series/nightly"
    assert "Alert: fail" in as_admin.get(url).get_data(as_text=True)
    search.ranks = list(GOOD)
    with app.app_context():
        jobs.tick(DAY1 + timedelta(days=2, hours=1))  # the 25th: back to normal, passes
    assert [c[0] for c in _checks(app)] == ["baseline", "fail", "pass"]
    twin = as_admin.get(url + "/json").get_json()
    newest = twin["checks"][0]
    assert newest["slot"] == "2026-11-25T03:00:00+00:00"  # UTC on every database
    assert datetime.fromisoformat(newest["created_at"]).utcoffset() == timedelta(0)
    page = as_admin.get(url).get_data(as_text=True)
    assert 'id="series-alert"' not in page  # no stale alarm at the top...
    assert '<strong class="outcome-fail">fail</strong>' in page  # ...the table keeps it


def test_a_long_series_name_keeps_the_slot_in_its_run_names(scheduled: Flask) -> None:
    app = scheduled
    long_name = "n" * 200  # the longest series name there is
    with app.app_context():
        test_set = testsets.require_by_name("sched")
        series.set_schedule(test_set, "live", "daily 04:00", long_name, k=10, now=DAY1)
        jobs.tick(DAY1 + timedelta(hours=2))
        jobs.tick(DAY1 + timedelta(days=1, hours=2))
    names = [run for _, run, _ in _checks(app)]
    assert [n[-16:] for n in names] == ["-2026-11-23-0400", "-2026-11-24-0400"]
    assert all(len(n) <= 196 for n in names)


def test_a_slot_whose_job_could_not_be_recorded_stays_due(
    scheduled: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim and its job are one transaction: a failure between them loses no slot."""
    from ndcg_labeler.services.jobs import records

    real = records.create_job

    def broken(*args: object, **kwargs: object) -> Job:
        raise RuntimeError("database went away")

    monkeypatch.setattr(records, "create_job", broken)
    with scheduled.app_context(), pytest.raises(RuntimeError):
        jobs.tick(DAY1 + timedelta(hours=1, seconds=30))
    monkeypatch.setattr(records, "create_job", real)
    with scheduled.app_context():
        (job,) = jobs.tick(DAY1 + timedelta(hours=1, minutes=1))
        assert job.params["slot"] == "2026-11-23T03:00:00+00:00"
        assert job.state == "done", job.error


def test_a_renamed_endpoints_past_checks_name_it_as_it_is_now(
    scheduled: Flask, as_admin: FlaskClient
) -> None:
    """A check keeps the name its endpoint had then; the page shows the endpoint as it is now,
    linked, with the old name beside it. Another endpoint that takes the old name is not it,
    and once the endpoint is deleted the check names it as it was, with no link."""
    app = scheduled
    with app.app_context():
        jobs.tick(DAY1 + timedelta(hours=1))
        test_set = testsets.require_by_name("sched")
        live = endpoints.require_endpoint(test_set, "live")
        endpoints.edit_endpoint(test_set, live, name="live-v2")
        endpoints.add_endpoint(
            test_set, "live", "http://127.0.0.1:9/?q={query}", preset_name="list"
        )
        test_set_id, live_id = test_set.id, live.id
    url = f"/test-sets/{test_set_id}/series/nightly"
    page = as_admin.get(url).get_data(as_text=True)
    link = f'<a href="/test-sets/{test_set_id}/endpoints/live-v2">live-v2</a> (then: live)'
    assert link in page
    assert f'href="/test-sets/{test_set_id}/endpoints/live"' not in page
    (check,) = as_admin.get(url + "/json").get_json()["checks"]
    assert (check["endpoint"], check["endpoint_id"], check["endpoint_current"]) == (
        "live",
        live_id,
        "live-v2",
    )
    with app.app_context():
        test_set = testsets.require_by_name("sched")
        series.set_schedule(test_set, "live-v2", "", "", k=10)
        endpoints.delete_endpoint(test_set, endpoints.require_endpoint(test_set, "live-v2"))
    page = as_admin.get(url).get_data(as_text=True)
    assert "live-v2" not in page and "<td>live (deleted)</td>" in page
    (check,) = as_admin.get(url + "/json").get_json()["checks"]
    assert (check["endpoint"], check["endpoint_id"], check["endpoint_current"]) == (
        "live",
        None,
        None,
    )
