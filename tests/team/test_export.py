"""Exports: every judgment as CSV and JSON Lines (service and CLI) and the aggregated qrels."""

from __future__ import annotations

import csv
import io
import json
import re

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import live
from ndcg_labeler.services import team as team_service
from tests.factory import TEAM_JUDGMENTS, build_team, judge

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$")
HEADER = "qid,docid,annotator,status,grade,note,active_ms,created_at,updated_at"


def _expected_rows() -> list[tuple[str, str, str, str, int | None, int]]:
    """The fixture's judgments sorted by qid, docid, annotator (what the export promises)."""
    return sorted((q, d, who, status, grade, ms) for q, d, who, status, grade, ms in TEAM_JUDGMENTS)


def _text(app: Flask, test_set_id: int, fmt: str) -> str:
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        return "".join(team_service.judgment_chunks(test_set, fmt))


def test_csv_has_every_judgment_with_times_and_notes(app: Flask):
    team = build_team(app)
    judge(app, team.id, "q2", "d7", "bob", grade=1, note='=HYPERLINK("x")', active_ms=1500)
    text = _text(app, team.id, "csv")
    assert text.splitlines()[0] == HEADER
    rows = list(csv.DictReader(io.StringIO(text)))
    got = [
        (r["qid"], r["docid"], r["annotator"], r["status"], r["grade"], int(r["active_ms"]))
        for r in rows
    ]
    want = [
        (q, d, who, status, "" if grade is None else str(grade), ms)
        for q, d, who, status, grade, ms in sorted(
            [*TEAM_JUDGMENTS, ("q2", "d7", "bob", "graded", 1, 1500)]
        )
    ]
    assert got == want
    assert all(ISO_UTC.match(r["created_at"]) and ISO_UTC.match(r["updated_at"]) for r in rows)
    noted = next(r for r in rows if r["docid"] == "d7")
    assert noted["note"] == '\'=HYPERLINK("x")'  # a spreadsheet will not run it


def test_jsonl_keeps_types_and_notes_verbatim(app: Flask):
    team = build_team(app)
    judge(app, team.id, "q2", "d7", "bob", grade=1, note="=1+1 and ünïcode", active_ms=1500)
    lines = _text(app, team.id, "jsonl").splitlines()
    objects = [json.loads(line) for line in lines]
    assert [list(o) for o in objects[:1]] == [HEADER.split(",")]
    got = [
        (o["qid"], o["docid"], o["annotator"], o["status"], o["grade"], o["active_ms"])
        for o in objects
    ]
    assert got == sorted([*_expected_rows(), ("q2", "d7", "bob", "graded", 1, 1500)])
    assert next(o for o in objects if o["docid"] == "d7")["note"] == "=1+1 and ünïcode"
    cant = next(o for o in objects if o["status"] == "cant_tell")
    assert cant["grade"] is None


def test_aggregated_qrels_use_the_policy(app: Flask):
    """Median (lower middle): d1 3,3,3 -> 3; d2 2,1,2 -> 2; d3 0,0 -> 0; d4 1,3 -> 1;
    d5 2,2 -> 2; d6 0 -> 0. Max: d2 -> 2, d4 -> 3."""
    team = build_team(app)
    with app.app_context():
        test_set = db.session.get_one(TestSet, team.id)
        assert live.qrels_text(test_set) == (
            "q1 0 d1 3\nq1 0 d2 2\nq1 0 d3 0\nq2 0 d4 1\nq2 0 d5 2\nq2 0 d6 0\n"
        )
        assert live.qrels_text(test_set, "max") == (
            "q1 0 d1 3\nq1 0 d2 2\nq1 0 d3 0\nq2 0 d4 3\nq2 0 d5 2\nq2 0 d6 0\n"
        )


def test_cli_export(app: Flask, runner: FlaskCliRunner):
    build_team(app, "Team set")
    result = runner.invoke(args=["judgments", "export", "Team set", "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    objects = [json.loads(line) for line in result.output.splitlines()]
    assert len(objects) == len(TEAM_JUDGMENTS)
    as_csv = runner.invoke(args=["judgments", "export", "Team set"])
    assert as_csv.output.splitlines()[0] == HEADER
    assert len(as_csv.output.splitlines()) == len(TEAM_JUDGMENTS) + 1
    bad = runner.invoke(args=["judgments", "export", "Nope"])
    assert bad.exit_code == 1 and bad.stderr == "Error: unknown test set 'Nope'\n"
    wrong = runner.invoke(args=["judgments", "export", "Team set", "--format", "xml"])
    assert wrong.exit_code == 2


def test_download_names_survive_any_test_set_name(app: Flask, as_admin: FlaskClient):
    # A WSGI server writes headers as latin-1: "日本語" in the file name broke the download
    # (werkzeug: UnicodeEncodeError, the connection dropped with no response).
    team = build_team(app, "日本語 Ärger/Q3")
    for url in ("export/judgments.csv", "export/judgments.jsonl", "export/qrels"):
        response = as_admin.get(f"/test-sets/{team.id}/{url}")
        assert response.status_code == 200 and response.get_data()  # streamed: read it all
        header = response.headers["Content-Disposition"]
        header.encode("latin-1")
        assert header.startswith('attachment; filename="Arger-Q3-')
    unnamed = TestSet(name="日本語")
    assert team_service.export_filename(unnamed, "judgments", "csv") == "test-set-judgments.csv"
