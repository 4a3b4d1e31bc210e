"""A small OpenAI-compatible chat-completions server on 127.0.0.1 for the judge tests.

Its answer depends on a marker in the passage text of the prompt:
ANSWER<n> -> "...reasoning...\\n##final score: n"; JSONANS<n> -> '{"score": n}';
GARBAGE -> prose without a grade; RATE429 -> 429 on the first request for that passage, then a
grade of 2; SLOW -> sleeps `slow_seconds` (set it longer than the judge's timeout); DELAYED ->
sleeps `delay_seconds` (shorter than the timeout), then a grade of 1; BROKEN -> HTTP 500 every
time. With `require_key` set, a request without "Authorization: Bearer <require_key>" gets 401.
With `rate_limited` set to n, the next n requests get 429 with "Retry-After: <retry_after>".
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from typing import Any

from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response


class FakeLLM:
    """Start with .start(); .url is the base URL (…/v1); .stop() shuts it down."""

    def __init__(self, slow_seconds: float = 1.0, delay_seconds: float = 0.1) -> None:
        self.requests: list[dict[str, Any]] = []
        self.seen: Counter[str] = Counter()
        self.slow_seconds = slow_seconds
        self.delay_seconds = delay_seconds
        self.lock = threading.Lock()
        self.server: Any = None
        self.thread: threading.Thread | None = None
        self.port = 0
        self.require_key: str | None = None
        self.rate_limited = 0
        self.retry_after = "0"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, port: int = 0) -> FakeLLM:
        self.server = make_server("127.0.0.1", port, self.app, threaded=True)
        self.port = self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def app(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        body = json.loads(request.get_data() or b"{}")
        prompt = body["messages"][0]["content"]
        passage = prompt.split("Passage:", 1)[1] if "Passage:" in prompt else prompt
        with self.lock:
            self.requests.append({"body": body, "auth": request.headers.get("Authorization")})
        if self.require_key is not None and (
            request.headers.get("Authorization") != f"Bearer {self.require_key}"
        ):
            return Response("no key", status=401)(environ, start_response)
        with self.lock:
            limited, self.rate_limited = self.rate_limited > 0, max(self.rate_limited - 1, 0)
        if limited:
            headers = {"Retry-After": self.retry_after}
            return Response("rate limited", status=429, headers=headers)(environ, start_response)
        response = self.answer(passage, body)
        return response(environ, start_response)

    def answer(self, passage: str, body: dict[str, Any]) -> Response:
        marker = re.search(r"(ANSWER\d|JSONANS\d|GARBAGE|RATE429|SLOW|DELAYED|BROKEN)", passage)
        key = marker.group(1) if marker else "NONE"
        with self.lock:
            self.seen[key] += 1
            count = self.seen[key]
        if key == "BROKEN":
            return Response("upstream exploded", status=500)
        if key == "RATE429" and count == 1:
            return Response("slow down", status=429, headers={"Retry-After": "0"})
        if key == "SLOW":
            time.sleep(self.slow_seconds)
        if key == "DELAYED":
            time.sleep(self.delay_seconds)
        if key.startswith("ANSWER"):
            text = f"Intent: find it. Match: good.\n##final score: {key[-1]}"
        elif key.startswith("JSONANS"):
            text = json.dumps({"score": int(key[-1])})
        elif key == "RATE429":
            text = "Final score: 2"
        elif key == "DELAYED":
            text = "Took a while.\n##final score: 1"
        elif key == "GARBAGE":
            text = "I would rather not say; it depends on many things."
        else:
            text = "##final score: 0"
        payload = {
            "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10},
            "model": body.get("model"),
        }
        return Response(json.dumps(payload), content_type="application/json")
