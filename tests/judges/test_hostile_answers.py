"""An endpoint's odd answers fail or leave one pair unparsed; they never stop the run."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from ndcg_labeler.services.judges.client import JudgeConfig, RateLimiter, ask

CONFIG = JudgeConfig("http://127.0.0.1:9/v1", "m", "", 0.0, 16, 1.0, 0)


def _client(handler: Any) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler))


def _ok(payload: Any) -> Any:
    return lambda request: httpx.Response(200, content=json.dumps(payload).encode())


@pytest.mark.parametrize(
    "payload",
    [
        {"choices": [{"message": {"content": 3}}]},  # not a string
        {"choices": [{"message": {"content": ["##final score: 2"]}}]},
        [1, 2],  # not an object
    ],
)
def test_content_that_is_not_text_fails_the_pair(payload: Any) -> None:
    answer = ask(_client(_ok(payload)), CONFIG, "p", RateLimiter(0))
    assert answer.text is None
    assert answer.error.startswith("malformed answer")


@pytest.mark.parametrize(
    "usage",
    ["none", {"prompt_tokens": "lots"}, {"prompt_tokens": -5}, {"completion_tokens": 1e400}],
)
def test_unreadable_usage_counts_no_tokens(usage: Any) -> None:
    payload = {"choices": [{"message": {"content": "##final score: 2"}}], "usage": usage}
    answer = ask(_client(_ok(payload)), CONFIG, "p", RateLimiter(0))
    assert answer.text == "##final score: 2"
    assert answer.prompt_tokens >= 0 and answer.completion_tokens >= 0


@pytest.mark.parametrize("header", ["nan", "-3", "inf", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_an_odd_retry_after_is_waited_within_bounds(
    header: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []
    monkeypatch.setattr("ndcg_labeler.services.judges.client.time.sleep", slept.append)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, headers={"Retry-After": header})

    answer = ask(_client(handler), CONFIG, "p", RateLimiter(0))
    assert answer.text is None and answer.error.startswith("HTTP 429")
    assert slept and all(0 <= s <= 20 for s in slept)


def test_an_answer_over_the_cap_fails_the_pair_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ndcg_labeler.services.judges.client.MAX_ANSWER_BYTES", 2**20)
    text = "blah " * 250_000 + "##final score: 1"  # 1.2 MB
    payload = {"choices": [{"message": {"content": text}}]}
    answer = ask(_client(_ok(payload)), CONFIG, "p", RateLimiter(0))
    assert answer.text is None and answer.error == "answer over 1 MB (not read)"
    small = {"choices": [{"message": {"content": "##final score: 1"}}]}
    assert ask(_client(_ok(small)), CONFIG, "p", RateLimiter(0)).text == "##final score: 1"
