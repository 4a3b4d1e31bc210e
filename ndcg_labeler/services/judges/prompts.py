"""Judge prompts: the default template (UMBRELA's structure, the test set's own scale), rendering
in a sandbox, and prompt versions (every distinct template text, by its sha256)."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

from ndcg_labeler.models import Chunk, PromptVersion, Query, TestSet
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services._db import insert_if_absent

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


@lru_cache(maxsize=32)
def _compiled(template: str) -> Any:
    from jinja2.sandbox import SandboxedEnvironment  # only judges need it

    env = SandboxedEnvironment(autoescape=False, keep_trailing_newline=True)
    return env.from_string(template)


def check_template(template: str) -> None:
    """Refuse a template that does not compile, or that the sandbox stops when it renders
    (attribute tricks such as `''.__class__`), with the reason shown to the admin who typed it."""
    from jinja2 import TemplateError
    from jinja2.exceptions import SecurityError

    try:
        compiled = _compiled(template)
    except TemplateError as exc:
        raise ServiceError(f"the prompt template does not compile: {exc}") from None
    sample = {"value": 1, "name": "Relevant", "definition": "answers part of the query"}
    try:
        compiled.render(
            scale_max=3, grades=[sample], query="q", narrative="", passage="p", qid="1", docid="d"
        )
    except SecurityError as exc:
        raise ServiceError(f"the prompt template is not allowed: {exc}") from None
    except TemplateError as exc:
        raise ServiceError(f"the prompt template fails when rendered: {exc}") from None


def render(template: str, test_set: TestSet, query: Query, chunk: Chunk) -> str:
    """The prompt for one pair: the test set's grade names and definitions, query, passage."""
    grades = [
        {"value": i, "name": label.get("name", ""), "definition": label.get("definition", "")}
        for i, label in enumerate(test_set.grade_labels)
    ]
    passage = "\n\n".join(part for part in (chunk.title or "", chunk.text or "") if part)
    return _compiled(template or DEFAULT_TEMPLATE).render(
        scale_max=test_set.scale_max,
        grades=grades,
        query=query.text,
        narrative=query.narrative or "",
        passage=passage,
        qid=query.qid,
        docid=chunk.docid,
    )


def prompt_version(template: str) -> str:
    """The sha256 of the template in use (the default's when empty), stored once."""
    text = template or DEFAULT_TEMPLATE
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    insert_if_absent(PromptVersion.__table__, [{"sha256": sha, "template": text}], ["sha256"])
    return sha
