"""The judge form's numbers and `flask judges add`'s: text as typed, refused in one sentence
naming the setting's range (never WTForms' "Not a valid integer value." nor click's), and an
empty field is the default."""

from __future__ import annotations

import html
from typing import Any

from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.services import ensembles, judges

URL = "http://127.0.0.1:9/v1"
TEMPERATURE = "the temperature must be a number from 0 to 2"
MAX_TOKENS = "max tokens must be a whole number from 1 to 100000"
TIMEOUT = "the timeout must be more than 0 and at most 600 s"
CONCURRENCY = "concurrency must be a whole number from 1 to 64"
RPM = "requests per minute must be a whole number from 0 (no limit) to 100000"
FEW_SHOT = "few-shot examples must be a whole number from 0 to 20"
INPUT = "the input price must be a number from 0 to 10000 dollars per million tokens"
OUTPUT = "the output price must be a number from 0 to 10000 dollars per million tokens"
# (form field, CLI flag, typed, the sentence both say)
REFUSED = [
    ("temperature", "--temperature", "warm", f"{TEMPERATURE}, not 'warm'"),
    ("temperature", "--temperature", "2.5", f"{TEMPERATURE}, not 2.5"),
    ("temperature", "--temperature", "nan", f"{TEMPERATURE}, not 'nan'"),
    ("max_tokens", "--max-tokens", "lots", f"{MAX_TOKENS}, not 'lots'"),
    ("max_tokens", "--max-tokens", "0", f"{MAX_TOKENS}, not 0"),
    ("max_tokens", "--max-tokens", "51.2", f"{MAX_TOKENS}, not '51.2'"),
    ("timeout", "--timeout", "30s", f"{TIMEOUT}, not '30s'"),
    ("timeout", "--timeout", "0", f"{TIMEOUT}, not 0"),
    ("concurrency", "--concurrency", "four", f"{CONCURRENCY}, not 'four'"),
    ("concurrency", "--concurrency", "65", f"{CONCURRENCY}, not 65"),
    ("requests_per_minute", "--rpm", "60/min", f"{RPM}, not '60/min'"),
    # Past PostgreSQL's INTEGER: refused, not a database error at the commit.
    ("requests_per_minute", "--rpm", "3000000000", f"{RPM}, not 3000000000"),
    ("requests_per_minute", "--rpm", "-1", f"{RPM}, not -1"),
    ("few_shot", "--few-shot", "three", f"{FEW_SHOT}, not 'three'"),
    ("few_shot", "--few-shot", "21", f"{FEW_SHOT}, not 21"),
    ("input_price", "--input-price", "$0.15", f"{INPUT}, not '$0.15'"),
    ("output_price", "--output-price", "-1", f"{OUTPUT}, not -1"),
]


def _form(**changes: str) -> dict[str, str]:
    return {"name": "j", "base_url": URL, "model": "m", **changes}


def test_numbers_that_are_wrong_are_refused_alike_in_the_form_and_the_cli(
    app: Flask, runner: FlaskCliRunner, as_admin: Any
) -> None:
    add = ["judges", "add", "j", "--base-url", URL, "--model", "m"]
    for field, flag, value, message in REFUSED:
        cli = runner.invoke(args=[*add, flag, value])
        assert cli.exit_code == 1 and f"Error: {message}" in cli.output, (flag, value, cli.output)
        page = as_admin.post("/judges/", data=_form(**{field: value}))
        text = html.unescape(page.get_data(as_text=True))
        assert page.status_code == 200, (field, value)
        assert f'id="{field}-error">{message}<' in text, (field, value, text[-3000:])
        assert "Not a valid" not in text
    with app.app_context():
        assert judges.list_judges() == []
    # `judges few-shot` and the form's few-shot field keep one range.
    assert FEW_SHOT.endswith(f"to {ensembles.MAX_FEW_SHOT}")


def test_number_fields_are_text_inputs_and_empty_ones_take_the_defaults(
    app: Flask, runner: FlaskCliRunner, as_admin: Any
) -> None:
    page = as_admin.get("/judges/").get_data(as_text=True)
    assert 'type="number"' not in page
    for field in ("max_tokens", "concurrency", "requests_per_minute", "few_shot"):
        assert f'id="{field}" inputmode="numeric"' in page or (
            f'inputmode="numeric" name="{field}"' in page
        ), field
    # Every number left empty (as a browser sends a number input it cannot read): the
    # defaults the CLI uses too, said on the form's labels.
    empty = dict.fromkeys(
        ("temperature", "max_tokens", "timeout", "concurrency", "requests_per_minute"), ""
    )
    added = as_admin.post("/judges/", data=_form(**empty, few_shot="", input_price=" "))
    assert added.status_code == 302, added.get_data(as_text=True)
    cli = runner.invoke(args=["judges", "add", "k", "--base-url", URL, "--model", "m"])
    assert cli.exit_code == 0, cli.output
    with app.app_context():
        for name in ("j", "k"):
            judge = judges.require_judge(name)
            settings = (judge.temperature, judge.max_tokens, judge.timeout, judge.concurrency)
            assert settings == (0.0, 512, 60.0, 8), name
            assert (judge.requests_per_minute, judge.few_shot) == (0, 0)
            assert (judge.input_price, judge.output_price) == (None, None)
    # Typed numbers, spaces around them, are kept.
    typed = _form(name="t", temperature=" 0.7 ", max_tokens="64", timeout="12.5")
    typed |= {"concurrency": "3", "requests_per_minute": "600", "few_shot": "2"}
    typed |= {"input_price": "0.15", "output_price": "0.6"}
    assert as_admin.post("/judges/", data=typed).status_code == 302
    with app.app_context():
        judge = judges.require_judge("t")
        assert (judge.temperature, judge.max_tokens, judge.timeout) == (0.7, 64, 12.5)
        assert (judge.concurrency, judge.requests_per_minute, judge.few_shot) == (3, 600, 2)
        assert (judge.input_price, judge.output_price) == (0.15, 0.6)
