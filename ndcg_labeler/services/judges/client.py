"""Asking an OpenAI-compatible chat-completions endpoint, with retries and backoff.

Covers OpenAI, Azure's compatible endpoint, vLLM, Ollama, llama.cpp's server and OpenRouter:
POST {base_url}/chat/completions. 429, 5xx, timeouts and dropped connections are retried with
exponential backoff; other errors fail the pair at once. A 429 or 503 with a Retry-After (seconds
or an HTTP date) is waited as stated, up to MAX_RETRY_AFTER, and up to RATE_LIMIT_WAITS such
waits do not use up the RETRIES: a provider that says "come back in two minutes" is obeyed
rather than answered with failed pairs, and a limit that never lifts still ends.
"""

from __future__ import annotations

import contextvars
import email.utils
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass, field
from typing import Any

from ndcg_labeler.services import outbound
from ndcg_labeler.services._progress import pause, raise_if_stopped

RETRIES = 4
BACKOFF = 0.5  # seconds before the first retry; doubled each time
MAX_BACKOFF = 20.0  # the longest wait of our own backoff
MAX_RETRY_AFTER = 300.0  # the longest Retry-After obeyed (a longer one: this long)
RATE_LIMIT_WAITS = 8  # Retry-After waits beside the RETRIES: at most 13 attempts in all
# The most of an answer's body read. 100,000 tokens (the largest max tokens) is well under a
# megabyte of JSON; an endpoint sending more is broken, and its text would be stored and shown.
MAX_ANSWER_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class JudgeConfig:
    """What a worker thread needs to ask (no ORM object crosses threads)."""

    base_url: str
    model: str
    api_key: str = field(repr=False)  # the value, read in the caller's thread; never logged
    temperature: float
    max_tokens: int
    timeout: float
    requests_per_minute: int
    key_env: str = ""  # the variable the key is read from (named in a 401's or 403's error)


@dataclass(frozen=True)
class Answer:
    """The endpoint's answer (text None when the request failed for good)."""

    text: str | None
    error: str
    latency_ms: int
    prompt_tokens: int
    completion_tokens: int


class RateLimiter:
    """At most `per_minute` request starts per minute (0: no limit), across threads."""

    def __init__(self, per_minute: int) -> None:
        self.interval = 60.0 / per_minute if per_minute > 0 else 0.0
        self.next_at = 0.0
        self.lock = threading.Lock()

    def wait(self) -> None:
        """Block until this thread may start a request (Cancelled: the job was cancelled)."""
        if not self.interval:
            return
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next_at)
            self.next_at = start + self.interval
        if start > now:
            pause(start - now)


def _stated_wait(response: Any) -> float | None:
    """The seconds a 429's or 503's Retry-After asks for, at most MAX_RETRY_AFTER; None without
    a readable one ("nan", "-3", "inf" and nonsense are not read)."""
    if response is None or response.status_code not in (429, 503):
        return None
    header = (response.headers.get("retry-after") or "").strip()
    if not header:
        return None
    try:
        wait = float(header)
    except ValueError:  # an HTTP date, or nonsense
        try:
            when = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        wait = when.timestamp() - time.time()
        wait = max(wait, 0.0)  # a date gone by: ask now
    if not math.isfinite(wait) or wait < 0:
        return None
    return min(wait, MAX_RETRY_AFTER)


def _backoff(attempt: int) -> float:
    """Our own wait before retry `attempt` + 1: doubling from BACKOFF, at most MAX_BACKOFF."""
    return min(BACKOFF * 2**attempt, MAX_BACKOFF)


def ask(client: Any, config: JudgeConfig, prompt: str, limiter: RateLimiter) -> Answer:
    """One chat completion for `prompt`: a failure is an Answer with an error. Raises only
    Cancelled, when the job asking is cancelled (its waits end at once; nothing is stored)."""
    import httpx

    headers = {"Content-Type": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    body = {
        "model": config.model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
    }
    url = config.base_url.rstrip("/") + "/chat/completions"
    error = ""
    started = time.monotonic()
    retries = waits = 0
    while True:
        raise_if_stopped()  # a cancelled job asks nothing more
        limiter.wait()
        response = None
        try:
            response, content = _post(client, url, body, headers, config.timeout)
        except outbound.OutboundRefused as exc:
            error = str(exc)
            break  # the policy will refuse the next try too
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            error = outbound.failure(exc, url, config.timeout)
        else:
            if response.status_code == 200 and content is None:
                latency = int(1000 * (time.monotonic() - started))
                too_big = f"answer over {MAX_ANSWER_BYTES // 2**20} MB (not read)"
                return Answer(None, too_big, latency, 0, 0)
            if response.status_code == 200:
                return _answer(content or b"", started)
            error = outbound.status_line(response) + _key_hint(config, response.status_code)
            if response.status_code != 429 and response.status_code < 500:
                break  # a 4xx other than 429 will not get better by asking again
        stated = _stated_wait(response)
        if stated is not None and waits < RATE_LIMIT_WAITS:
            waits += 1  # the provider said how long: waiting it out is no failed try
        elif retries < RETRIES:
            retries += 1
        else:
            break
        pause(_backoff(retries - 1) if stated is None else stated)
    return Answer(None, error, int(1000 * (time.monotonic() - started)), 0, 0)


def _key_hint(config: JudgeConfig, status: int) -> str:
    """What a refused request's error adds about the judge's key: a 401 or 403 from an
    endpoint asked without one reads as a broken endpoint unless the variable is named."""
    if status not in (401, 403) or not config.key_env:
        return ""
    if not config.api_key:
        return "".join(f" ({warning})" for warning in outbound.unset_secrets([config.key_env]))
    return f" (check the key in {config.key_env})"


def _post(
    client: Any, url: str, body: dict[str, Any], headers: dict[str, str], timeout: float
) -> tuple[Any, bytes | None]:
    """The response and its body, None when the body is over MAX_ANSWER_BYTES (left unread)."""
    with client.stream("POST", url, json=body, headers=headers, timeout=timeout) as response:
        if response.status_code != 200:
            return response, b""  # only the status line is used: the body is never read
        content = bytearray()
        for piece in response.iter_bytes():
            content += piece
            if len(content) > MAX_ANSWER_BYTES:
                return response, None
        return response, bytes(content)


def _answer(content: bytes, started: float) -> Answer:
    latency = int(1000 * (time.monotonic() - started))
    try:
        data = json.loads(content)
        text = data["choices"][0]["message"]["content"] or ""
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return Answer(None, f"malformed answer: {exc!r}", latency, 0, 0)
    if not isinstance(text, str):  # a number or a list would break the grade's parser
        return Answer(None, f"malformed answer: content is {type(text).__name__}", latency, 0, 0)
    usage = data.get("usage") if isinstance(data, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    return Answer(
        text,
        "",
        latency,
        _tokens(usage.get("prompt_tokens")),
        _tokens(usage.get("completion_tokens")),
    )


def _tokens(value: Any) -> int:
    """A usage count as the endpoint gave it, or 0 when it is no count (text, negative, inf)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value) if 0 <= value < 2**31 else 0


def ask_each(
    pool: Executor,
    one: Callable[[Any], Answer],
    prompts: Sequence[Any],
    each: Callable[[int, Answer], None],
) -> list[Answer]:
    """`one(prompt)` for every prompt on the pool, answers in order; `each(i, answer)` is
    called in this thread as each answer comes.

    Per answer, not per batch: a batch of a slow endpoint can take minutes, and the job's
    progress (its heartbeat, and where a Cancel is noticed) is reported from `each`. When
    `each` raises, the questions not yet started are dropped and the exception goes on."""
    # Each question in a copy of this thread's context: it carries the job's stop event.
    futures = [pool.submit(contextvars.copy_context().run, one, prompt) for prompt in prompts]
    where = {future: i for i, future in enumerate(futures)}
    answers: list[Any] = [None] * len(futures)
    try:
        for future in as_completed(futures):
            i = where[future]
            answers[i] = future.result()
            each(i, answers[i])
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    return answers
