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


def _make(runner: FlaskCliRunner, name: str, role: str = "annotator") -> None:
    result = runner.invoke(args=["user", "create", name, "--role", role], input="tulip-ember-1a\n")
    assert result.exit_code == 0, result.output


def test_a_lost_admin_password_is_reset_from_the_command_line(
    app: Flask, runner: FlaskCliRunner
) -> None:
    # The only admin forgot their password: no page can help, the shell must.
    _make(runner, "boss", "admin")
    result = runner.invoke(args=["user", "edit", "boss", "--password"], input="quartz-lantern-77\n")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "Saved boss: password set; their sessions were ended."
    with app.app_context():
        boss = get_by_username("boss")
        assert boss is not None and boss.check_password("quartz-lantern-77")
    events = runner.invoke(args=["audit", "export", "--action", "user.password_reset"]).output
    assert ",cli,user.password_reset,user," in events


def test_edit_changes_role_and_activity_as_the_users_page_does(
    app: Flask, runner: FlaskCliRunner
) -> None:
    _make(runner, "boss", "admin")
    _make(runner, "ann")
    result = runner.invoke(args=["user", "edit", "ann", "--role", "admin", "--inactive"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == (
        "Saved ann: role admin, deactivated; their sessions were ended."
    )
    with app.app_context():
        ann = get_by_username("ann")
        assert ann is not None and (ann.role, ann.active) == ("admin", False)
    again = runner.invoke(args=["user", "edit", "ann", "--active"])
    assert again.output.strip() == "Saved ann: activated."
    weak = runner.invoke(args=["user", "edit", "ann", "--password"], input="password123\n")
    assert weak.exit_code == 1 and "too easy to guess" in weak.output
    nothing = runner.invoke(args=["user", "edit", "ann"])
    assert nothing.exit_code == 1
    assert "nothing to change: give --role, --active/--inactive, --password or --revoke-token" in (
        nothing.output
    )
    missing = runner.invoke(args=["user", "edit", "nobody", "--active"])
    assert missing.exit_code == 1 and missing.output.strip() == "Error: no user 'nobody'"


def test_the_last_active_admin_stays(app: Flask, runner: FlaskCliRunner) -> None:
    _make(runner, "boss", "admin")
    for args in (["--role", "annotator"], ["--inactive"]):
        result = runner.invoke(args=["user", "edit", "boss", *args])
        assert result.exit_code == 1
        assert result.output.strip() == (
            "Error: 'boss' is the last active admin: make another admin first, or nobody "
            "could manage people"
        )
    _make(runner, "second", "admin")
    assert runner.invoke(args=["user", "edit", "boss", "--inactive"]).exit_code == 0


def test_list_shows_everyone_who_can_log_in(app: Flask, runner: FlaskCliRunner) -> None:
    _make(runner, "boss", "admin")
    _make(runner, "ann")
    runner.invoke(args=["user", "edit", "ann", "--inactive"])
    result = runner.invoke(args=["user", "list"])
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines()]
    assert rows[0] == ["username", "role", "active", "sign-in", "api-token", "created"]
    assert [row[:5] for row in rows[1:]] == [
        ["ann", "annotator", "no", "password", "no"],
        ["boss", "admin", "yes", "password", "no"],
    ]
    as_json = runner.invoke(args=["user", "list", "--json"])
    import json

    people = json.loads(as_json.output)
    assert [(p["username"], p["role"], p["active"], p["api_token"]) for p in people] == [
        ("ann", "annotator", False, False),
        ("boss", "admin", True, False),
    ]


def test_an_unmigrated_database_is_named_not_dumped(tmp_path) -> None:
    # `flask bootstrap` before `flask db upgrade` printed a page of SQLAlchemy traceback.
    from tests.factory import make_app

    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'empty.sqlite3'}")
    for args in (["bootstrap"], ["user", "list"]):
        result = app.test_cli_runner().invoke(args=args)
        assert result.exit_code == 1, args
        assert result.output.strip() == (
            "Error: the database has no table 'user': it was never set up or is older than "
            "this version; run `flask --app app db upgrade` first"
        ), args
