"""Endpoints in the browser as on the command line: names, limits, a capped Try, cancelling."""

from __future__ import annotations

import html
from typing import Any

from flask import Flask
from flask.testing import FlaskCliRunner

from tests.factory import build_test_set

URL = "http://127.0.0.1:9/s?q={query}"  # nothing listens: these tests never ask it


def test_a_name_with_a_non_ascii_letter_is_refused_in_words_that_say_so(
    app: Flask, runner: FlaskCliRunner, as_admin: Any
) -> None:
    with app.app_context():
        ts_id = build_test_set("names", {"q1": "x"}).id
    said = "the letters A–Z and a–z (no accents), digits 0–9, spaces, '.', '_' or '-'"
    cli = runner.invoke(
        args=["endpoints", "add", "names", "ü name", "--url", URL, "--preset", "list"]
    )
    assert cli.exit_code == 1 and said in cli.output, cli.output
    page = as_admin.post(
        f"/test-sets/{ts_id}/endpoints/",
        data={"name": "ü name", "url": URL, "method": "GET", "preset": "list"},
    )
    assert page.status_code == 200 and said in html.unescape(page.get_data(as_text=True))
