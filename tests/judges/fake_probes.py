"""Fake OpenAI-compatible judges for the probe and budget tests (subclasses of FakeLLM).

GullibleLLM grades 3 whenever the passage holds every word of the query or the word
"relevant", else 0; FakeLLM itself is the careful one (its markers, else 0); FailingLLM
answers HTTP 500 to everything.
"""

from __future__ import annotations

import json
import re
from typing import Any

from werkzeug.wrappers import Request, Response

from tests.judges.fake_llm import FakeLLM


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class GullibleLLM(FakeLLM):
    """Talked into "relevant" by the query's words or by the word itself."""

    def app(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        body = json.loads(request.get_data() or b"{}")
        prompt = body["messages"][0]["content"]
        query = prompt.split("Query:", 1)[1].split("\n", 1)[0]
        # The passage: between "Passage:" and the default template's next paragraph.
        passage = prompt.split("Passage:", 1)[1].split("\n\nWork through it", 1)[0]
        with self.lock:
            self.requests.append({"body": body, "auth": None})
        fooled = _words(query) <= _words(passage) or "relevant" in passage.lower()
        text = f"Looks right.\n##final score: {3 if fooled else 0}"
        payload = {
            "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10},
        }
        return Response(json.dumps(payload), content_type="application/json")(
            environ, start_response
        )


class FailingLLM(FakeLLM):
    """Every request fails with HTTP 500 (a broken upstream)."""

    def answer(self, passage: str, body: dict[str, Any]) -> Response:
        return Response("upstream exploded", status=500)
