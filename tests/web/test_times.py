"""Times on pages: one filter renders them all, in UTC and marked so."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.rendering import utc_time
from tests.factory import build_runs

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_utc_filter_converts_and_marks() -> None:
    naive = datetime(2026, 3, 4, 5, 6, 7)  # SQLite hands back naive UTC times
    assert utc_time(naive) == "2026-03-04 05:06 UTC"
    assert utc_time(naive, "%Y-%m-%d %H:%M:%S") == "2026-03-04 05:06:07 UTC"
    berlin = datetime(2026, 3, 4, 1, 30, tzinfo=timezone(timedelta(hours=2)))
    assert utc_time(berlin) == "2026-03-03 23:30 UTC"  # PostgreSQL's aware times, converted
    assert utc_time(naive, "%Y-%m-%d") == "2026-03-04"  # a date alone carries no mark
    assert utc_time(None) == ""


def test_no_template_formats_a_time_by_itself() -> None:
    """Every time goes through `| utc`: a bare strftime would show a time with no zone."""
    offenders = [
        str(path.relative_to(TEMPLATES))
        for path in TEMPLATES.rglob("*.html")
        if ".strftime(" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_upload_times_are_marked_utc(app: Flask, as_admin: FlaskClient) -> None:
    test_set_id = build_runs(app, "Times").id
    page = as_admin.get(f"/test-sets/{test_set_id}/runs/").get_data(as_text=True)
    shown = re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)?(?: UTC)?", page)
    assert len(shown) == 2 and all(t.endswith(" UTC") for t in shown), shown
