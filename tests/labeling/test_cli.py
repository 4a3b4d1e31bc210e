"""`flask judge` and `flask qrels export`: output, database effects, one-line errors."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judgment, JudgmentEvent, TestSet
from ndcg_labeler.services import accounts
from tests.factory import build, make_user


def _rows():
    return db.session.execute(
        sa.select(Judgment.annotator_id, Judgment.status, Judgment.grade)
    ).all()


def test_judge_sets_updates_and_keeps_history(app: Flask, runner: FlaskCliRunner, annotator_id):
    build(app, "Helpdesk")
    result = runner.invoke(args=["judge", "Helpdesk", "q1", "d2", "3", "--user", "ann"])
    assert result.exit_code == 0, result.output
    assert result.output == "q1 d2: grade 3 by ann (set)\n"
    again = runner.invoke(args=["judge", "Helpdesk", "q1", "d2", "3", "--user", "ann"])
    assert again.output == "q1 d2: grade 3 by ann (unchanged)\n"
    changed = runner.invoke(args=["judge", "Helpdesk", "q1", "d2", "1", "--user", "ann"])
    assert changed.exit_code == 0
    with app.app_context():
        assert _rows() == [(annotator_id, "graded", 1)]
        events = db.session.execute(
            sa.select(JudgmentEvent.old_grade, JudgmentEvent.new_grade).order_by(JudgmentEvent.id)
        ).all()
        assert events == [(None, 3), (3, 1)]
        assert db.session.scalar(sa.select(TestSet.labels_version)) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["Nope", "q1", "d1", "1"], "Error: unknown test set 'Nope'"),
        (["Helpdesk", "q9", "d1", "1"], "Error: test set 'Helpdesk' has no query 'q9'"),
        (["Helpdesk", "q1", "d9", "1"], "Error: test set 'Helpdesk' has no chunk 'd9'"),
        (["Helpdesk", "q1", "d1", "4"], "Error: grade 4 is outside this test set's scale 0–3"),
        (["Helpdesk", "q1", "d1", "-1"], "Error: grade -1 is outside this test set's scale 0–3"),
        (
            ["Helpdesk", "q1", "d1", "high"],
            "Error: grade must be a whole number from 0 to 3, not 'high'",
        ),
    ],
)
def test_judge_refuses_bad_input(app: Flask, runner: FlaskCliRunner, annotator_id, args, message):
    build(app, "Helpdesk")
    result = runner.invoke(args=["judge", *args, "--user", "ann"])
    assert result.exit_code == 1
    assert result.stderr == message + "\n"
    with app.app_context():
        assert _rows() == []


def test_judge_refuses_unknown_user_and_import_sources(app: Flask, runner: FlaskCliRunner):
    build(app, "Helpdesk")
    with app.app_context():
        accounts.import_source("old.qrels")
        db.session.commit()
    for name in ("ghost", "import:old.qrels"):
        result = runner.invoke(args=["judge", "Helpdesk", "q1", "d1", "1", "--user", name])
        assert result.exit_code == 1
        assert result.stderr == f"Error: unknown user '{name}'\n"
    missing = runner.invoke(args=["judge", "Helpdesk", "q1", "d1", "1"])
    assert missing.exit_code != 0


def test_qrels_export_prints_aggregated_grades_sorted(app: Flask, runner: FlaskCliRunner):
    build(app, "Helpdesk", pool={"q2": ["d3", "d10"], "q1": ["d2", "d1"]})
    for name in ("a", "b", "c"):
        make_user(app, name)
    judgments = [
        ("a", "q2", "d3", "1"),
        ("b", "q2", "d3", "3"),
        ("c", "q2", "d3", "3"),
        ("a", "q1", "d2", "0"),
        ("a", "q2", "d10", "2"),
        ("b", "q2", "d10", "0"),
    ]
    for user, qid, docid, grade in judgments:
        result = runner.invoke(args=["judge", "Helpdesk", qid, docid, grade, "--user", user])
        assert result.exit_code == 0, result.output
    # q1/d1 was never graded: absent. Median of (1, 3, 3) = 3; of (0, 2) the lower middle = 0.
    result = runner.invoke(args=["qrels", "export", "Helpdesk"])
    assert result.exit_code == 0
    assert result.output == "q1 0 d2 0\nq2 0 d10 0\nq2 0 d3 3\n"
    maximum = runner.invoke(args=["qrels", "export", "Helpdesk", "--policy", "max"])
    assert maximum.output == "q1 0 d2 0\nq2 0 d10 2\nq2 0 d3 3\n"


def test_qrels_export_errors(app: Flask, runner: FlaskCliRunner):
    build(app, "Helpdesk")
    unknown = runner.invoke(args=["qrels", "export", "Nope"])
    assert (unknown.exit_code, unknown.stderr) == (1, "Error: unknown test set 'Nope'\n")
    policy = runner.invoke(args=["qrels", "export", "Helpdesk", "--policy", "vote"])
    assert policy.exit_code == 1
    assert policy.stderr.startswith("Error: unknown aggregation policy 'vote'")
    empty = runner.invoke(args=["qrels", "export", "Helpdesk"])
    assert (empty.exit_code, empty.output) == (0, "")
