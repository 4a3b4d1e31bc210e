"""A provider's long rate limit is waited out: a Retry-After past our own backoff's 20 s is
obeyed up to 300 s, and such waits do not use up the retries, so a run that is told to wait a
few minutes labels its pairs instead of failing them. Offline: a fake server on 127.0.0.1 and
a fake sleep (the test never waits minutes)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.services import judges
from ndcg_labeler.services.imports import ImportFile, import_files
from tests.factory import build_test_set, trec
from tests.judges.fake_llm import FakeLLM

# Written out, not read from the client: the documented numbers.
RETRIES = 4  # attempts after the first that an error may use
RATE_LIMIT_WAITS = 8  # 429/503s with a Retry-After waited out beside them
CAP = 300.0  # the longest Retry-After obeyed


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def slept(app: Flask, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Test set `ts` with one pair and judge `gpt` at the fake; the waits the client asked."""
    waits: list[float] = []
    monkeypatch.setattr("ndcg_labeler.services.judges.client.time.sleep", waits.append)
    with app.app_context():
        test_set = build_test_set("ts", {"q1": "refunds"}, corpus={"d1": "ANSWER3 refunds"})
        import_files(test_set, pool=ImportFile(io.BytesIO(trec({"q1": ["d1"]})), "pool.trec"))
        judges.add_judge("gpt", llm.url, "m", concurrency=1)
    return waits


def _run(runner: FlaskCliRunner) -> dict:
    result = runner.invoke(args=["judges", "run", "ts", "--judge", "gpt", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_two_minute_rate_limit_more_times_than_retries_is_waited_out(
    runner: FlaskCliRunner, llm: FakeLLM, slept: list[float]
) -> None:
    llm.rate_limited, llm.retry_after = RETRIES + 2, "120"
    found = _run(runner)
    assert (found["labeled"], found["failed"]) == (1, 0)
    assert slept == [120.0] * (RETRIES + 2)  # as stated, not cut to 20 s
    assert len(llm.requests) == RETRIES + 3


def test_a_retry_after_past_the_cap_is_waited_the_cap(
    runner: FlaskCliRunner, llm: FakeLLM, slept: list[float]
) -> None:
    llm.rate_limited, llm.retry_after = 1, "3600"
    assert _run(runner)["labeled"] == 1
    assert slept == [CAP]


def test_attempts_stay_bounded_when_the_limit_never_lifts(
    runner: FlaskCliRunner, llm: FakeLLM, slept: list[float]
) -> None:
    llm.rate_limited, llm.retry_after = 1000, "60"
    found = _run(runner)
    assert (found["labeled"], found["failed"]) == (0, 1)
    assert len(llm.requests) == 1 + RATE_LIMIT_WAITS + RETRIES
    assert slept == [60.0] * (RATE_LIMIT_WAITS + RETRIES)
