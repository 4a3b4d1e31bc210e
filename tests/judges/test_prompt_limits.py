"""Prompt templates under limits: time, output size, range(), repetition, formatting, memory;
refused with a message on the form, the CLI and in a run, never a 500 or a stuck worker."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from jinja2.sandbox import SandboxedEnvironment

from ndcg_labeler.services import ServiceError, judges
from ndcg_labeler.services.judges.prompts import PromptRenderer, check_template

VARIABLES = {
    "scale_max": 3,
    "grades": [
        {"value": 0, "name": "Irrelevant", "definition": ""},
        {"value": 3, "name": "Perfect", "definition": "answers the query fully"},
    ],
    "query": "refund policy",
    "narrative": "How long do I have to return an item?",
    "passage": "Refunds within 30 days.\n\nBring the receipt.",
    "qid": "q1",
    "docid": "d1",
}
BIG_STRING = '{% set s = "a" * 100000 %}'


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ range(10**9)|length }}", "range() may produce at most 10,000 items"),
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "range()",
        ),
        ("{{ '{:>1000000000}'.format(1) }}", "format specification"),
        ("{{ '{x:>{w}}'.format_map({'x': 1, 'w': 10**9}) }}", "may not be computed"),
        ("{{ '{0}'.format_map({}) }}", "fails when rendered: IndexError"),
        ('{{ "%1000000000s"|format(1) }}', "'%' format"),
        ('{{ "x"|center(10**9) }}', "center()"),
        ("{{ 10 ** 100000 }}", "too large a number"),
        ('{% for i in range(10000) %}{{ "x" * 100 }}{% endfor %}', "longer than 200 kB"),
        (BIG_STRING + '{{ s|replace("a", s)|length }}', "more than 256 MB of memory"),
    ],
)
def test_templates_over_a_limit_are_refused_with_the_reason(template: str, message: str) -> None:
    started = time.monotonic()
    with pytest.raises(ServiceError, match="prompt template") as refused:
        check_template(template)
    assert message in str(refused.value)
    assert time.monotonic() - started < 2


def test_the_worker_kills_a_renderer_that_does_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    # The child's own alarm answers after 2 s; a call that never returns to Python would not,
    # so the parent kills it: here the parent's patience is made shorter than the alarm.
    monkeypatch.setattr("ndcg_labeler.services.judges.prompts.GRACE", -1.6)
    started = time.monotonic()
    with pytest.raises(ServiceError, match="longer than 2 s"):
        check_template(BIG_STRING + "{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}")
    assert time.monotonic() - started < 1.5


def test_the_default_and_normal_templates_render_as_before() -> None:
    plain = SandboxedEnvironment(autoescape=False, keep_trailing_newline=True)
    custom = (
        "{% for g in grades %}{{ g.value }}={{ g.name|upper }} {% endfor %}\n"
        "{{ query|title }} / {{ passage|truncate(20) }} / {{ '%s-%s'|format(qid, docid) }}"
        " / {{ '{}!'.format(docid) }} / {{ '-' * 10 }} / {{ range(3)|list }}"
    )
    with PromptRenderer("") as renderer:
        default = renderer.render(VARIABLES)
    assert default == plain.from_string(judges.DEFAULT_TEMPLATE).render(VARIABLES)
    with PromptRenderer(custom) as renderer:
        assert renderer.render(VARIABLES) == plain.from_string(custom).render(VARIABLES)
        # The same process serves the next pair (one start per run, not per pair).
        assert renderer.render({**VARIABLES, "docid": "d2"}).count("d2!") == 1
    check_template(judges.DEFAULT_TEMPLATE)


def test_one_pair_over_a_limit_fails_alone_and_the_renderer_recovers() -> None:
    template = '{% if docid == "big" %}{{ passage * 1000 }}{% endif %}{{ passage }}'
    with PromptRenderer(template) as renderer:
        assert renderer.render(VARIABLES).startswith("Refunds")
        with pytest.raises(ServiceError, match="repeating a sequence"):
            renderer.render({**VARIABLES, "docid": "big", "passage": "x" * 1000})
        assert renderer.render(VARIABLES).startswith("Refunds")


def test_the_judge_form_shows_a_template_over_a_limit(app: Flask, as_admin: FlaskClient) -> None:
    page = as_admin.post(
        "/judges/",
        data={
            "name": "bomb",
            "base_url": "http://127.0.0.1:9/v1",
            "model": "m",
            "temperature": "0",
            "max_tokens": "256",
            "timeout": "5",
            "concurrency": "2",
            "requests_per_minute": "0",
            "prompt_template": '{% set a = "a" * 1000000000 %}{{ a|length }}',
        },
    )
    assert page.status_code == 200
    assert "repeating a sequence would make more than 200 kB" in page.get_data(as_text=True)
    with app.app_context():
        assert judges.list_judges() == []


def test_the_cli_refuses_a_template_over_a_limit(
    app: Flask, runner: FlaskCliRunner, tmp_path: Path
) -> None:
    prompt = tmp_path / "prompt.j2"
    prompt.write_text("{{ range(10**9)|length }}", encoding="utf-8")
    args = ["judges", "add", "bomb", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    result = runner.invoke(args=[*args, "--prompt", str(prompt)])
    assert result.exit_code == 2
    assert "range() may produce at most 10,000 items" in result.output


def test_a_renderer_that_dies_is_a_refusal_not_a_500(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    dying = tmp_path / "dying.py"
    dying.write_text("raise SystemExit(1)\n", encoding="utf-8")
    monkeypatch.setattr("ndcg_labeler.services.judges.prompts.SANDBOX", dying)
    with PromptRenderer("{{ query }}") as renderer:
        for _ in range(2):  # asked once: every later pair gets the same answer at once
            with pytest.raises(ServiceError, match="its process stopped"):
                renderer.render(VARIABLES)
        assert renderer.child is None
