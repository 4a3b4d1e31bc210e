"""Compiled templates are kept in the instance folder: a fresh worker's first page loads them
instead of compiling them again, and a changed template is never served from the old code."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
from flask import Flask

from tests.factory import make_app


def _no_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a template was compiled again")

    monkeypatch.setattr(jinja2.Environment, "compile", refuse)


def test_a_new_process_loads_the_compiled_templates(
    app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = app.test_client().get("/login")
    assert first.status_code == 200
    compiled = Path(app.instance_path) / "templates-compiled"
    assert list(compiled.iterdir())  # written by the first process
    # Another process on the same instance folder (a new server worker, say).
    again = make_app(Path(app.instance_path), app.config["SQLALCHEMY_DATABASE_URI"])
    _no_compiling(monkeypatch)
    page = again.test_client().get("/login")
    assert page.status_code == 200 and 'name="username"' in page.get_data(as_text=True)


def test_a_changed_template_is_compiled_again(app: Flask) -> None:
    """The cache is keyed by each template's source: an upgrade's new templates show."""
    loader = jinja2.DictLoader({"note.html": "old {{ x }}"})
    env = app.jinja_env.overlay(loader=loader)
    assert env.get_template("note.html").render(x=1) == "old 1"
    loader.mapping["note.html"] = "new {{ x }}"
    fresh = app.jinja_env.overlay(loader=loader)  # a new process: nothing in memory
    assert fresh.get_template("note.html").render(x=1) == "new 1"
