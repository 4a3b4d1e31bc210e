"""`flask backup` / `flask restore`: a round trip keeps every row of every table; guards hold."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditEvent
from tests.factory import build_dashboard, build_team, grant, make_app, make_user


@pytest.fixture
def sqlite_app(tmp_path: Path, sqlite_template: Path) -> Iterator:
    """Apps on their own migrated SQLite files (backups are a SQLite feature)."""
    made: list[Flask] = []

    def make(name: str) -> Flask:
        path = tmp_path / f"{name}.sqlite3"
        shutil.copy(sqlite_template, path)
        app = make_app(tmp_path / name, f"sqlite:///{path}")
        made.append(app)
        return app

    yield make
    for app in made:
        with app.app_context():
            db.engine.dispose()


def _dump(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table of a SQLite file, in primary-key order (read with sqlite3)."""
    with sqlite3.connect(path) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {t: conn.execute(f'SELECT * FROM "{t}" ORDER BY 1').fetchall() for t in tables}


def _file(app: Flask) -> Path:
    with app.app_context():
        return Path(db.engine.url.database)


def _fill(app: Flask) -> None:
    admin = make_user(app, "admin", "admin")
    team = build_team(app)
    build_dashboard(app)
    grant(app, team.id, admin)
    runner = app.test_cli_runner()
    assert runner.invoke(args=["testset", "revoke", "Team set", "alice"]).exit_code == 0


def test_round_trip_keeps_every_row(sqlite_app, tmp_path: Path, record_property) -> None:
    source = sqlite_app("source")
    _fill(source)
    before = _dump(_file(source))
    assert len(before["judgment"]) == 15 + 10 and before["run_query"] and before["audit_event"]
    backup_file = tmp_path / "backup.sqlite3"
    result = source.test_cli_runner().invoke(args=["backup", str(backup_file)])
    assert result.exit_code == 0, result.output
    assert "Backed up to" in result.output

    target = sqlite_app("target")
    result = target.test_cli_runner().invoke(args=["restore", str(backup_file)])
    assert result.exit_code == 0, result.output
    after = _dump(_file(target))
    assert set(after) == set(before)
    for table in before:
        if table == "audit_event":
            continue
        assert after[table] == before[table], table
    # The audit trail is the backup's, plus the restore itself.
    assert after["audit_event"][:-1] == before["audit_event"]
    with target.app_context():
        last = db.session.scalars(sa.select(AuditEvent).order_by(AuditEvent.id.desc())).first()
        assert (last.action, last.actor_name) == ("database.restore", "cli")
    with source.app_context():
        actions = list(db.session.scalars(sa.select(AuditEvent.action).order_by(AuditEvent.id)))
        assert actions[-1] == "database.backup"
    rows = sum(len(rows) for rows in before.values())
    record_property(
        "security-summary",
        f"backup and restore (sqlite): {len(before)} tables, {rows:,} rows compared, "
        "0 differences (plus the restore's own audit row)",
    )


def test_restore_refuses_a_database_with_data_unless_forced(sqlite_app, tmp_path: Path) -> None:
    source = sqlite_app("source")
    _fill(source)
    backup_file = tmp_path / "b.sqlite3"
    assert source.test_cli_runner().invoke(args=["backup", str(backup_file)]).exit_code == 0
    target = sqlite_app("target")
    make_user(target, "someone")
    result = target.test_cli_runner().invoke(args=["restore", str(backup_file)])
    assert result.exit_code == 1
    assert "not empty; pass --force" in result.output
    assert [row[1] for row in _dump(_file(target))["user"]] == ["someone"]
    result = target.test_cli_runner().invoke(args=["restore", "--force", str(backup_file)])
    assert result.exit_code == 0, result.output
    assert "someone" not in [row[1] for row in _dump(_file(target))["user"]]


def test_backup_refuses_to_overwrite_unless_forced(sqlite_app, tmp_path: Path) -> None:
    app = sqlite_app("one")
    existing = tmp_path / "exists.sqlite3"
    existing.write_text("keep me")
    result = app.test_cli_runner().invoke(args=["backup", str(existing)])
    assert result.exit_code == 1 and "exists; pass --force" in result.output
    assert existing.read_text() == "keep me"
    assert app.test_cli_runner().invoke(args=["backup", "--force", str(existing)]).exit_code == 0
    assert existing.read_bytes().startswith(b"SQLite format 3\x00")


def test_restore_checks_the_file(sqlite_app, tmp_path: Path) -> None:
    app = sqlite_app("one")
    runner = app.test_cli_runner()
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    result = runner.invoke(args=["restore", str(text)])
    assert result.exit_code == 1 and "is not a SQLite database" in result.output
    foreign = tmp_path / "foreign.sqlite3"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    result = runner.invoke(args=["restore", str(foreign)])
    assert result.exit_code == 1 and "no alembic_version" in result.output
    future = tmp_path / "future.sqlite3"
    with sqlite3.connect(future) as conn:
        conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32))")
        conn.execute("INSERT INTO alembic_version VALUES ('9999_future')")
    result = runner.invoke(args=["restore", str(future)])
    assert result.exit_code == 1 and "unknown to this app" in result.output
    result = runner.invoke(args=["restore", str(tmp_path / "missing.sqlite3")])
    assert result.exit_code == 1 and "no such file" in result.output


def test_postgresql_is_refused_with_pg_dump_hint(tmp_path: Path) -> None:
    # No connection is made: the refusal comes from the URL alone.
    app = make_app(tmp_path, "postgresql+psycopg://nobody@127.0.0.1:1/none")
    runner = app.test_cli_runner()
    for args in (["backup", str(tmp_path / "x")], ["restore", str(tmp_path / "x")]):
        result = runner.invoke(args=args)
        assert result.exit_code == 1
        assert "pg_dump" in result.output and "pg_restore" in result.output
    assert not (tmp_path / "x").exists()


def test_a_forced_restore_keeps_the_database_it_overwrites(sqlite_app, tmp_path: Path) -> None:
    # --force used to throw away everything since the backup, with no way back.
    source = sqlite_app("source")
    _fill(source)
    backup_file = tmp_path / "b.sqlite3"
    assert source.test_cli_runner().invoke(args=["backup", str(backup_file)]).exit_code == 0
    target = sqlite_app("target")
    make_user(target, "someone")
    live = _file(target)
    refused = target.test_cli_runner().invoke(args=["restore", str(backup_file)])
    assert "a copy of it is kept beside it first" in refused.output
    result = target.test_cli_runner().invoke(args=["restore", "--force", str(backup_file)])
    assert result.exit_code == 0, result.output
    (kept,) = live.parent.glob(f"{live.name}.before-restore-*")
    assert f"The database as it was is kept in {kept}." in result.output
    assert [row[1] for row in _dump(kept)["user"]] == ["someone"]
    assert "someone" not in [row[1] for row in _dump(live)["user"]]
    with target.app_context():
        last = db.session.scalars(sa.select(AuditEvent).order_by(AuditEvent.id.desc())).first()
        assert last.action == "database.restore" and last.details["kept"] == str(kept)


def test_a_restore_into_an_empty_database_keeps_no_copy(sqlite_app, tmp_path: Path) -> None:
    source = sqlite_app("source")
    _fill(source)
    backup_file = tmp_path / "b.sqlite3"
    assert source.test_cli_runner().invoke(args=["backup", str(backup_file)]).exit_code == 0
    target = sqlite_app("target")
    live = _file(target)
    result = target.test_cli_runner().invoke(args=["restore", "--force", str(backup_file)])
    assert result.exit_code == 0, result.output
    assert not list(live.parent.glob(f"{live.name}.before-restore-*"))
    assert "kept in" not in result.output
