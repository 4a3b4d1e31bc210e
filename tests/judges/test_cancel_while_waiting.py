"""Cancel reaches a judge or fetch job while it waits: out a provider's Retry-After (up to
300 s) or for its own requests-per-minute limit. Before, such a job noticed Cancel only when an
answer came, so a rate-limited run went on for minutes after the user pressed it. Offline: fake
servers on 127.0.0.1 (the judge's answers every request with 429 and "Retry-After: 300")."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, MachineJudgment
from ndcg_labeler.services import endpoints, jobs, judges, testsets
from ndcg_labeler.services.imports import ImportFile, import_files
from ndcg_labeler.services.jobs.runner import run_job
from tests.factory import build_test_set, trec
from tests.judges.fake_llm import FakeLLM


@pytest.fixture
def limited(app: Flask) -> Iterator[FakeLLM]:
    """Test set `cw` with three pooled pairs; judges `slow` and `paced` (one request a
    minute) at a fake that is always rate-limited for five minutes."""
    server = FakeLLM().start()
    server.rate_limited, server.retry_after = 10_000, "300"
    with app.app_context():
        test_set = build_test_set(
            "cw", {"q1": "refunds"}, corpus={f"d{i}": f"ANSWER1 text {i}" for i in range(3)}
        )
        pool = {"q1": ["d0", "d1", "d2"]}
        import_files(test_set, pool=ImportFile(io.BytesIO(trec(pool)), "pool.trec"))
        judges.add_judge("slow", server.url, "m", concurrency=2, timeout=5)
        judges.add_judge("paced", server.url, "m", concurrency=2, timeout=5, requests_per_minute=1)
    yield server
    server.stop()


def _start(app: Flask, judge: str) -> tuple[int, threading.Thread]:
    with app.app_context():
        test_set = testsets.require_by_name("cw")
        job_id = jobs.enqueue_judge(test_set, judges.require_judge(judge).id, "all", None).id

    def work() -> None:
        with app.app_context():
            run_job(job_id)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return job_id, thread


def _cancel_when(app: Flask, job_id: int, asked: object) -> float:
    """Cancel the job once `asked()` holds; the moment it was cancelled."""
    deadline = time.monotonic() + 10
    while not asked() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert asked(), "the judge was never asked"
    time.sleep(0.3)  # into the wait
    with app.app_context():
        assert jobs.cancel(db.session.get(Job, job_id)) == "stopping"
    return time.monotonic()


def _ended(app: Flask, job_id: int) -> Job:
    with app.app_context():
        return db.session.get(Job, job_id)


def test_cancel_ends_a_job_waiting_out_a_retry_after(app: Flask, limited: FakeLLM) -> None:
    job_id, thread = _start(app, "slow")
    cancelled = _cancel_when(app, job_id, lambda: len(limited.requests) >= 2)
    thread.join(timeout=15)
    assert not thread.is_alive(), "the job still waits out the provider's 300 s"
    assert time.monotonic() - cancelled < 10
    job = _ended(app, job_id)
    assert job.state == "cancelled", (job.state, job.message)
    assert len(limited.requests) == 2  # nobody asked again after the 429s
    with app.app_context():
        # No pair is stored as failed "because it was cancelled": they stay to be asked.
        assert db.session.scalar(sa.select(sa.func.count()).select_from(MachineJudgment)) == 0


def test_cancel_ends_a_job_waiting_for_its_own_rate_limit(app: Flask, limited: FakeLLM) -> None:
    limited.rate_limited = 0  # answered at once, but the judge may ask once a minute
    job_id, thread = _start(app, "paced")
    _cancel_when(app, job_id, lambda: len(limited.requests) >= 1)
    thread.join(timeout=15)
    assert not thread.is_alive(), "the job still waits for its next minute"
    assert _ended(app, job_id).state == "cancelled"
    assert len(limited.requests) == 1


def test_cancel_ends_a_fetch_waiting_for_its_endpoints_rate_limit(app: Flask) -> None:
    from tests.endpoints.test_endpoint_edges import Programmable, hits

    fake = Programmable()
    fake.answer = hits({"id": "d0", "score": 1.0})
    try:
        with app.app_context():
            test_set = build_test_set("cf", {"q1": "refunds", "q2": "leave", "q3": "pay"})
            endpoints.add_endpoint(
                test_set, "es", fake.url + "/?q={query}", preset_name="list", requests_per_minute=1
            )
            job_id = jobs.enqueue_fetch(test_set, "es", "r1", 10, False, None).id

        def work() -> None:
            with app.app_context():
                run_job(job_id)

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        _cancel_when(app, job_id, lambda: len(fake.seen) >= 1)
        thread.join(timeout=15)
        assert not thread.is_alive(), "the fetch still waits for its next minute"
        assert _ended(app, job_id).state == "cancelled"
        assert len(fake.seen) == 1
    finally:
        fake.stop()
