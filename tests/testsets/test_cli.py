"""`flask testset ...`: exact names, printed counts, exit codes and one-line errors."""

from __future__ import annotations

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query, TestSet, TestSetMember
from tests.testsets.helpers import BEIR, DATA, counts


def _one_line_error(result, text: str) -> None:
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ") and text in lines[0], lines[0]


def test_create(app: Flask, runner: FlaskCliRunner) -> None:
    result = runner.invoke(args=["testset", "create", "Shop", "--scale", "4"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "Created test set 'Shop' (grades 0–4).\n"
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == "Shop"))
        assert test_set.scale_max == 4 and len(test_set.grade_labels) == 5


def test_create_defaults_to_scale_3(app: Flask, runner: FlaskCliRunner) -> None:
    assert runner.invoke(args=["testset", "create", "Shop"]).exit_code == 0
    with app.app_context():
        assert db.session.scalar(sa.select(TestSet.scale_max)) == 3


def test_create_errors(app: Flask, runner: FlaskCliRunner) -> None:
    _one_line_error(runner.invoke(args=["testset", "create", "S", "--scale", "5"]), "--scale")
    _one_line_error(runner.invoke(args=["testset", "create", "S", "--scale", "x"]), "--scale")
    assert runner.invoke(args=["testset", "create", "S"]).exit_code == 0
    _one_line_error(runner.invoke(args=["testset", "create", "S"]), "already exists")
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(TestSet)) == 1


def test_import_prints_counts_and_is_idempotent(app: Flask, runner: FlaskCliRunner) -> None:
    runner.invoke(args=["testset", "create", "Small"])
    args = [
        "testset",
        "import",
        "Small",
        "--queries",
        str(BEIR / "queries.jsonl"),
        "--corpus",
        str(BEIR / "corpus.jsonl"),
        "--pool",
        str(BEIR / "pool.tsv"),
        "--qrels",
        str(BEIR / "qrels" / "test.tsv"),
        "--source",
        "beir",
    ]
    result = runner.invoke(args=args)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "queries: 3 created, 0 updated, 0 unchanged",
        "chunks: 12 created, 0 updated, 0 unchanged",
        "pairs to judge: 12 created, 0 updated, 0 unchanged",
        "judgments of source 'beir': 4 created, 0 updated, 0 unchanged",
    ]
    again = runner.invoke(args=args)
    assert again.exit_code == 0
    assert "judgments of source 'beir': 0 created, 0 updated, 4 unchanged" in again.stdout
    with app.app_context():
        assert counts(1)["judgments"] == 4


def test_import_errors_are_one_line_and_write_nothing(app: Flask, runner: FlaskCliRunner) -> None:
    _one_line_error(
        runner.invoke(args=["testset", "import", "Nope", "--queries", str(DATA / "topics.tsv")]),
        "unknown test set 'Nope'",
    )
    runner.invoke(args=["testset", "create", "S"])
    _one_line_error(
        runner.invoke(args=["testset", "import", "S", "--queries", "/no/such/file.jsonl"]),
        "/no/such/file.jsonl: no such file",
    )
    _one_line_error(runner.invoke(args=["testset", "import", "S"]), "at least one file")
    pool = str(DATA / "pool.csv")
    result = runner.invoke(
        args=["testset", "import", "S", "--queries", str(DATA / "topics.tsv"), "--pool", pool]
    )
    _one_line_error(result, f"{pool}:2: unknown query 'c2'")
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Query)) == 0


def test_list_grant_revoke(app: Flask, runner: FlaskCliRunner, annotator_id: int) -> None:
    runner.invoke(args=["testset", "create", "S"])
    result = runner.invoke(args=["testset", "list"])
    assert result.stdout == "S\tgrades 0–3\t0 queries\t0 chunks\t0/0 pairs judged\n"
    assert runner.invoke(args=["testset", "grant", "S", "ann"]).exit_code == 0
    with app.app_context():
        assert db.session.scalar(sa.select(TestSetMember.user_id)) == annotator_id
    _one_line_error(runner.invoke(args=["testset", "grant", "S", "ghost"]), "unknown user")
    assert runner.invoke(args=["testset", "revoke", "S", "ann"]).exit_code == 0
    with app.app_context():
        assert db.session.scalar(sa.select(TestSetMember.user_id)) is None
