"""Crash consistency of the web paths: kill -9 of the server in the middle of a browser run
upload, and of the job worker in the middle of a run upload it stores in the background.
Afterwards no half run is visible, the app starts, the scores of an existing run are unchanged,
and a job whose worker died is ended when a worker starts again: failed as interrupted with
nothing stored, or done when the run was committed before the kill (while it was scored)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job
from ndcg_labeler.services import jobs as job_service
from ndcg_labeler.services.jobs.recovery import INTERRUPTED, STORED_THEN_STOPPED
from tests.factory import PASSWORD, build_test_set, make_user, trec
from tests.reliability.annotators import hidden_fields, login, start_server
from tests.reliability.crashes import (
    KILL_AT,
    SCALE,
    flask_cli,
    half_runs,
    kill_group,
    score,
    stored_runs,
)

# Reduced sizes (each test < ~40 s on 2 CPUs): QUERIES x DEPTH lines, ~19 bytes a line;
# bench/crash.py runs them at full size (NDCG_CRASH_SCALE).
QUERIES, DEPTH = 400 * SCALE, 1000
ENTRIES = QUERIES * DEPTH


def _prepare(app: Flask, tmp_path: Path) -> tuple[str, Path, dict]:
    """Test set Crash (id 1) with run A, its scores, an admin, and the big run file."""
    queries = {f"q{i}": f"query {i}" for i in range(QUERIES)}
    big = tmp_path / "big.trec"
    big.write_bytes(trec({q: [f"d{j}" for j in range(DEPTH)] for q in queries}))
    make_user(app, "boss", "admin")
    with app.app_context():
        assert build_test_set("Crash", queries, [("q1", "d1", 2), ("q2", "d3", 1)]).id == 1
        db.session.remove()
        db.engine.dispose()
    small = tmp_path / "a.trec"
    small.write_bytes(trec({"q1": ["d1", "d2"], "q2": ["d3"]}))
    url = app.config["SQLALCHEMY_DATABASE_URI"]
    flask_cli(url, "run", "upload", "Crash", str(small), "--name", "A").communicate(timeout=120)
    return url, big, score(url)


@contextlib.contextmanager
def _admin(base: str) -> Iterator[httpx.Client]:
    """An HTTP client logged in as the admin."""
    with httpx.Client(base_url=base, timeout=120, follow_redirects=False) as client:
        login(client, "boss", PASSWORD)
        yield client


def _post_run(client: httpx.Client, big: Path, name: str) -> httpx.Response:
    """Test set 1's run upload form, posted as a browser posts it (CSRF token from the form)."""
    form_url = "/test-sets/1/runs/upload"
    token = hidden_fields(client.get(form_url).text)["csrf_token"]
    with big.open("rb") as stream:
        return client.post(
            form_url,
            data={"csrf_token": token, "name": name},
            files={"file": (big.name, stream, "text/plain")},
        )


def _check_whole_or_none(app: Flask, name: str) -> str:
    """No run is stored half; the run `name` is there whole (with every line) or not at all."""
    runs = stored_runs(app)
    assert half_runs(runs) == []
    if name not in runs:
        return "none"
    assert runs[name] == (QUERIES, ENTRIES, QUERIES, ENTRIES)
    return "whole"


@pytest.mark.slow
def test_kill_9_during_a_browser_upload_leaves_no_half_run(
    app: Flask, tmp_path: Path, record_property
) -> None:
    url, big, before = _prepare(app, tmp_path)
    # A file under NDCG_JOB_THRESHOLD_MB is stored by the web request itself (views/runs.py
    # compares the upload's size with it); the threshold is raised so that this file, big
    # enough to be killed at distinct points, is one.
    settings = {"NDCG_JOB_THRESHOLD_MB": "1024"}
    server, base = start_server(url, tmp_path, workers=1, settings=settings)
    try:
        with _admin(base) as client:
            started = time.monotonic()
            answer = _post_run(client, big, "B-whole")
            took = time.monotonic() - started
        assert answer.status_code == 302 and "/runs/" in answer.headers["location"]
        assert _check_whole_or_none(app, "B-whole") == "whole"
        outcomes = []
        for n, fraction in enumerate(KILL_AT):
            with _admin(base) as client:
                thread = threading.Thread(target=_quietly, args=(client, big, f"B{n}"))
                thread.start()
                time.sleep(fraction * took)
                kill_group(server)
                thread.join(timeout=60)
            outcomes.append(_check_whole_or_none(app, f"B{n}"))
            server, base = start_server(url, tmp_path, workers=1, settings=settings)
            assert httpx.get(base + "/login").status_code == 200  # the app starts again
            assert score(url) == before
    finally:
        kill_group(server)
    record_property(
        "security-summary",
        f"kill -9 of gunicorn during a browser run upload ({url.split(':')[0]}, "
        f"{ENTRIES:,} lines, {took:.1f} s whole): {len(outcomes)} trials "
        f"({outcomes.count('none')} before the commit, {outcomes.count('whole')} after), "
        "0 half runs, scores unchanged after each, the app starts",
    )


def _quietly(client: httpx.Client, big: Path, name: str) -> None:
    """Post the run; the server dying mid-request ends the request quietly."""
    with contextlib.suppress(httpx.HTTPError):
        _post_run(client, big, name)


class _Seen(NamedTuple):
    state: str
    error: str | None
    message: str
    upload_path: str  # where the upload is spooled ("db:<token>")
    phase: str  # the last phase the job reported
    started: float | None  # time.time() of started_at and finished_at
    finished: float | None


def _spooled(app: Flask, upload_path: str) -> bool:
    """Whether the job's upload is still spooled (in the database)."""
    with app.app_context():
        found = job_service.is_spooled(upload_path)
        db.session.remove()
        db.engine.dispose()
    return found


def _job(app: Flask, job_id: int) -> _Seen:
    """The job's row as it is now."""

    def seconds(moment: datetime | None) -> float | None:
        return moment.replace(tzinfo=moment.tzinfo or UTC).timestamp() if moment else None

    with app.app_context():
        db.session.remove()
        job = db.session.get(Job, job_id)
        found = _Seen(
            job.state,
            job.error,
            job.message,
            job.upload_path,
            job.phase,
            seconds(job.started_at),
            seconds(job.finished_at),
        )
        db.session.remove()
        db.engine.dispose()
    return found


def _wait_for(app: Flask, job_id: int, states: set[str], limit: float = 60) -> _Seen:
    """Poll the job's state until it is one of `states`; returns it."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        seen = _job(app, job_id)
        if seen.state in states:
            return seen
        time.sleep(0.02)
    raise AssertionError(f"job {job_id} never reached {states}")


_JOB = re.compile(r"/jobs/(\d+)$")


@pytest.mark.slow
def test_kill_9_of_the_job_worker_leaves_no_half_run_and_recovery_ends_the_job(
    app: Flask, tmp_path: Path, record_property
) -> None:
    url, big, before = _prepare(app, tmp_path)
    server, base = start_server(url, tmp_path, workers=1)  # the default threshold: 2 MB

    def enqueue(name: str) -> int:
        """A browser upload of the big file: queued as a job, the browser sent to its page."""
        with _admin(base) as client:
            answer = _post_run(client, big, name)
        assert answer.status_code == 302
        found = _JOB.search(answer.headers["location"])
        assert found, answer.headers["location"]
        return int(found.group(1))

    def worker() -> subprocess.Popen:
        return flask_cli(url, "jobs", "worker", instance=tmp_path, stdout=None)

    try:
        probe = enqueue("B-whole")
        running = worker()
        whole = _wait_for(app, probe, {"done", "failed"})
        assert whole.state == "done" and whole.started and whole.finished
        took = whole.finished - whole.started  # as the worker's clock saw it
        assert _check_whole_or_none(app, "B-whole") == "whole"
        kill_group(running)
        outcomes, phases, recovered_done = [], Counter(), 0
        for n, fraction in enumerate(KILL_AT):
            job_id = enqueue(f"B{n}")
            running = worker()
            claimed = _wait_for(app, job_id, {"running", "done"}).started or 0.0
            time.sleep(max(0.0, claimed + fraction * took - time.time()))
            kill_group(running)
            running = worker()  # a worker starting again recovers the dead worker's job
            state, error, message, spooled, phase, *_ = _wait_for(app, job_id, {"done", "failed"})
            if message in (INTERRUPTED, STORED_THEN_STOPPED):  # recovered: its spool is removed
                deadline = time.monotonic() + 30
                while _spooled(app, spooled) and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert not _spooled(app, spooled)
            kill_group(running)
            outcome = _check_whole_or_none(app, f"B{n}")
            # Failed as interrupted with nothing stored, or done with the whole run: killed
            # after the run's commit (while scoring it), the job is done, as recovery found.
            assert (state, error or "", outcome) in {
                ("failed", INTERRUPTED, "none"),
                ("done", "", "whole"),
            }
            with _admin(base) as client:  # and the job's page says so
                page = client.get(f"/jobs/{job_id}").text
            assert (INTERRUPTED if state == "failed" else f"Run B{n} uploaded") in page
            if state == "failed":
                phases[phase or "starting"] += 1
            recovered_done += message == STORED_THEN_STOPPED
            outcomes.append(outcome)
            assert score(url) == before
    finally:
        kill_group(server)
    record_property(
        "security-summary",
        f"kill -9 of the job worker during a background run upload ({url.split(':')[0]}, "
        f"{ENTRIES:,} lines, {took:.1f} s whole): {len(outcomes)} trials "
        f"({outcomes.count('none')} failed as interrupted [last phase reported: "
        f"{', '.join(f'{p} {c}' for p, c in sorted(phases.items()))}], "
        f"{outcomes.count('whole')} done [{recovered_done} of them by the recovery: killed "
        "while scoring the stored run]), "
        "0 half runs, scores unchanged after each, the worker starts again",
    )
