"""`flask user create NAME --role ...` with the password from standard input."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.services.accounts import get_by_username


def test_create_user_reads_password_from_stdin(app: Flask, runner: FlaskCliRunner) -> None:
    result = runner.invoke(
        args=["user", "create", "carol", "--role", "admin"], input="s3cret-tulip-ember\n"
    )
    assert result.exit_code == 0, result.output
    with app.app_context():
        carol = get_by_username("carol")
        assert carol is not None and carol.role == "admin"
        assert carol.check_password("s3cret-tulip-ember")


def test_duplicate_user_is_a_one_line_error(app: Flask, runner: FlaskCliRunner) -> None:
    assert runner.invoke(args=["user", "create", "dan"], input="tulip-ember-one-1\n").exit_code == 0
    result = runner.invoke(args=["user", "create", "dan"], input="tulip-ember-two-2\n")
    assert result.exit_code == 1
    assert result.output.strip() == "Error: user 'dan' already exists"


def test_short_password_is_refused(app: Flask, runner: FlaskCliRunner) -> None:
    result = runner.invoke(args=["user", "create", "eve"], input="short\n")
    assert result.exit_code == 1
    assert "at least 10 characters" in result.output
    with app.app_context():
        assert get_by_username("eve") is None


def test_bootstrap_creates_admin_once_with_generated_password(
    app: Flask, runner: FlaskCliRunner
) -> None:
    first = runner.invoke(args=["bootstrap"])
    assert first.exit_code == 0, first.output
    line = next(x for x in first.output.splitlines() if "Password:" in x)
    password = line.split("Password:")[1].strip()
    with app.app_context():
        assert get_by_username("admin").check_password(password)
    second = runner.invoke(args=["bootstrap"])
    assert "Password:" not in second.output
