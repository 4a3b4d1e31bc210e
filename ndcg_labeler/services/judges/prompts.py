"""Judge prompts: the default template (UMBRELA's structure, the test set's own scale), rendering
in a limited sandbox in a child process, and prompt versions (every template text, by sha256)."""

from __future__ import annotations

import hashlib
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ndcg_labeler.models import Chunk, PromptVersion, Query, TestSet
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services._db import insert_if_absent
from ndcg_labeler.services.judges.sandbox import MEMORY_LIMIT, OVER, TIME_LIMIT

# Our own wording of the structure UMBRELA uses: the scale with each grade's meaning, where
# each grade starts, the query and passage verbatim, step-by-step reasoning about intent,
# match and trustworthiness, and one final line in a fixed form.
DEFAULT_TEMPLATE = """\
You judge how relevant a passage is to a search query, on a scale from 0 to {{ scale_max }}:
{% for grade in grades %}
{{ grade.value }} = {{ grade.name }}{% if grade.definition %}: {{ grade.definition }}{% endif %}
{%- endfor %}

Where each grade starts: give {{ scale_max }} only when the passage answers the query fully on
its own; give a grade between 1 and {{ scale_max - 1 }} when it helps partly or is on the topic
without answering; give 0 when none of the above fits.

Query: {{ query }}
{% if narrative %}What the person searching wants: {{ narrative }}
{% endif %}
Passage: {{ passage }}

Work through it in steps: what is the intent behind the query; how well does the passage
match that intent; how trustworthy is the passage. Weigh these and decide on one grade.
End your answer with exactly one line of the form:
##final score: N
where N is a whole number from 0 to {{ scale_max }}.
"""


# Why a child process and not only a stricter sandbox: Jinja's sandbox stops attribute tricks,
# but one C-level call (`"a" * 10**9`, `"x"|center(10**9)`, a doubled string) cannot be
# interrupted from Python and holds the worker's memory until it ends. The child checks the
# cheap cases itself (sandbox.LimitedSandbox: clear messages, no allocation) and runs under
# RLIMIT_AS and its own alarm; whatever slips through is killed here after the time limit.
SANDBOX = Path(__file__).with_name("sandbox.py")
STARTUP_TIMEOUT = 15.0  # seconds for a fresh child to import Jinja and compile (a busy host)
GRACE = 1.0  # seconds past the time limit before the child is killed rather than asked
_SAMPLE = {
    "scale_max": 3,
    "grades": [{"value": 1, "name": "Relevant", "definition": "answers part of the query"}],
    "query": "q",
    "narrative": "",
    "passage": "p",
    "qid": "1",
    "docid": "d",
}


class TemplateRefused(ServiceError):
    """A prompt template that does not compile, is not allowed, or goes over a limit."""


class PromptRenderer:
    """One template rendered for many pairs in a child process under hard limits (time,
    output size, memory); a template over a limit raises TemplateRefused saying which."""

    def __init__(self, template: str) -> None:
        self.template = template or DEFAULT_TEMPLATE
        self.child: subprocess.Popen[bytes] | None = None
        self.broken = ""  # the template's compile error: the same for every pair, asked once

    def __enter__(self) -> PromptRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the child process (it would end on its own when its input closes)."""
        if self.child is not None:
            self.child.kill()
            with self.child:  # closes its pipes and reaps it
                self.child = None

    def render(self, variables: dict[str, Any]) -> str:
        """The prompt for these variables, or TemplateRefused (a new child after any failure)."""
        if self.broken:
            raise TemplateRefused(self.broken)
        if self.child is None:
            self.child = subprocess.Popen(
                [sys.executable, "-I", str(SANDBOX)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={},  # nothing of the app's settings or secrets, even after an escape
            )
            ready = self._ask({"template": self.template}, STARTUP_TIMEOUT, "start")
            if "error" in ready:
                self.broken = ready["error"]
                self.close()
                raise TemplateRefused(self.broken)
        answer = self._ask(variables, TIME_LIMIT + GRACE, "render")
        if "error" in answer:
            self.close()  # the next pair gets a fresh process, whatever this one holds
            raise TemplateRefused(answer["error"])
        return str(answer["prompt"])

    def _ask(self, message: dict[str, Any], timeout: float, doing: str) -> dict[str, Any]:
        """Send one line, read one line within `timeout`; the child is killed on silence."""
        child = self.child
        if child is None or child.stdin is None or child.stdout is None:
            raise RuntimeError("the renderer has no child process")
        megabytes = MEMORY_LIMIT >> 20
        stopped = {"error": f"{OVER}its process stopped (it may need over {megabytes} MB)"}
        try:
            child.stdin.write(json.dumps(message).encode("ascii") + b"\n")
            child.stdin.flush()
        except BrokenPipeError:
            self.close()
            return stopped
        deadline, received = time.monotonic() + timeout, bytearray()
        fd = child.stdout.fileno()
        while not received.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.close()
                limit = TIME_LIMIT if doing == "render" else timeout  # the grace is ours
                return {"error": f"{OVER}it takes longer than {limit:g} s to {doing}"}
            data = os.read(fd, 1 << 16)
            if not data:
                self.close()
                return stopped
            received += data
        answer: dict[str, Any] = json.loads(received)
        return answer


def check_template(template: str) -> None:
    """Refuse a template that does not compile, that the sandbox stops (attribute tricks such
    as `''.__class__`), or that goes over a limit, with the reason shown to the admin."""
    with PromptRenderer(template) as renderer:
        renderer.render(_SAMPLE)


def prompt_variables(test_set: TestSet, query: Query, chunk: Chunk) -> dict[str, Any]:
    """What a template sees for one pair: the test set's grades, the query, the passage."""
    grades = [
        {"value": i, "name": label.get("name", ""), "definition": label.get("definition", "")}
        for i, label in enumerate(test_set.grade_labels)
    ]
    passage = "\n\n".join(part for part in (chunk.title or "", chunk.text or "") if part)
    return {
        "scale_max": test_set.scale_max,
        "grades": grades,
        "query": query.text,
        "narrative": query.narrative or "",
        "passage": passage,
        "qid": query.qid,
        "docid": chunk.docid,
    }


def prompt_version(template: str) -> str:
    """The sha256 of the template in use (the default's when empty), stored once."""
    text = template or DEFAULT_TEMPLATE
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    insert_if_absent(PromptVersion.__table__, [{"sha256": sha, "template": text}], ["sha256"])
    return sha
