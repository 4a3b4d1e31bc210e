"""`flask backup` / `flask restore` when things go wrong: clear errors, nothing half-written."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from flask import Flask

from ndcg_labeler.extensions import db
from tests.factory import make_app, make_user

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def one_app(tmp_path: Path, sqlite_template: Path):
    """An app on a migrated SQLite file of its own."""
    path = tmp_path / "app.sqlite3"
    shutil.copy(sqlite_template, path)
    app = make_app(tmp_path / "instance", f"sqlite:///{path}")
    yield app
    with app.app_context():
        db.engine.dispose()


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_backup_into_a_missing_folder_says_so(one_app: Flask, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "b.sqlite3"
    result = one_app.test_cli_runner().invoke(args=["backup", str(target)])
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error:") and "no such folder" in result.output
    assert not (tmp_path / "no").exists()


def test_a_backup_where_nothing_can_be_written_says_so(one_app: Flask, tmp_path: Path) -> None:
    # A file where the folder should be: no user, root included, can write below it.
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    result = one_app.test_cli_runner().invoke(args=["backup", str(blocker / "b.sqlite3")])
    assert result.exit_code == 1 and result.output.startswith("Error:"), result.output
    assert blocker.read_text() == "x"


def test_a_backup_that_runs_out_of_room_leaves_nothing(one_app: Flask, tmp_path: Path) -> None:
    """A full disk, as a file-size limit (RLIMIT_FSIZE) on the process that backs up."""
    make_user(one_app, "someone")
    folder = tmp_path / "out"
    folder.mkdir()
    database = one_app.config["SQLALCHEMY_DATABASE_URI"]
    assert Path(database.removeprefix("sqlite:///")).stat().st_size > 64 * 1024

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))

    env = {**os.environ, "DATABASE_URL": database, "PYTHONPATH": str(ROOT)}
    env["NDCG_INSTANCE_PATH"] = str(tmp_path / "instance")
    done = subprocess.run(
        [sys.executable, "-m", "flask", "--app", "app", "backup", str(folder / "b.sqlite3")],
        cwd=ROOT, env=env, preexec_fn=small_files, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("Error:") and "Traceback" not in done.stderr, done.stderr
    assert leftovers(folder) == []


def test_a_backup_taken_during_writes_is_whole(one_app: Flask, tmp_path: Path) -> None:
    path = Path(one_app.config["SQLALCHEMY_DATABASE_URI"].removeprefix("sqlite:///"))
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE scratch (n INTEGER, pad TEXT)")
    stop = threading.Event()

    def write() -> None:
        with sqlite3.connect(path, timeout=10) as conn:
            n = 0
            while not stop.is_set():
                # Two rows per transaction: a whole copy holds an even number of them.
                conn.execute("INSERT INTO scratch VALUES (?, ?)", (n, "x" * 500))
                conn.execute("INSERT INTO scratch VALUES (?, ?)", (n, "y" * 500))
                conn.commit()
                n += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        results = []
        for number in range(3):
            target = tmp_path / f"b{number}.sqlite3"
            results.append((target, one_app.test_cli_runner().invoke(args=["backup", str(target)])))
    finally:
        stop.set()
        writer.join()
    for target, result in results:
        assert result.exit_code == 0, result.output
        with sqlite3.connect(target) as copy:
            assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            rows = copy.execute("SELECT count(*) FROM scratch").fetchone()[0]
        assert rows % 2 == 0


def test_restoring_a_newer_backup_says_to_upgrade(one_app: Flask, tmp_path: Path) -> None:
    future = tmp_path / "future.sqlite3"
    database = Path(one_app.config["SQLALCHEMY_DATABASE_URI"].removeprefix("sqlite:///"))
    shutil.copy(database, future)
    with sqlite3.connect(future) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0099_from_the_future'")
    before = database.read_bytes()
    result = one_app.test_cli_runner().invoke(args=["restore", str(future)])
    assert result.exit_code == 1
    assert "a newer version of ndcg-labeler" in result.output, result.output
    assert database.read_bytes() == before


def test_restoring_a_missing_or_odd_file_says_so(one_app: Flask, tmp_path: Path) -> None:
    runner = one_app.test_cli_runner()
    empty = tmp_path / "empty.sqlite3"
    empty.write_bytes(b"")
    half = tmp_path / "half.sqlite3"
    database = Path(one_app.config["SQLALCHEMY_DATABASE_URI"].removeprefix("sqlite:///"))
    half.write_bytes(database.read_bytes()[:8192])
    for path, message in [
        (tmp_path / "nope.sqlite3", "no such file"),
        (tmp_path, "is a directory"),
        (empty, "is not a SQLite database"),
        (half, str(half)),
    ]:
        result = runner.invoke(args=["restore", str(path)])
        assert result.exit_code in (1, 2) and message in result.output, (path, result.output)
        assert "Traceback" not in result.output


def test_a_restore_that_runs_out_of_room_keeps_the_database(
    one_app: Flask, tmp_path: Path, sqlite_template: Path
) -> None:
    """A full disk while the backup is copied in: an error, and the database as it was."""
    big = tmp_path / "big.sqlite3"
    shutil.copy(sqlite_template, big)
    with sqlite3.connect(big) as conn:
        conn.execute("CREATE TABLE filler (pad TEXT)")
        conn.executemany("INSERT INTO filler VALUES (?)", [("x" * 4000,)] * 200)
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    database = Path(one_app.config["SQLALCHEMY_DATABASE_URI"].removeprefix("sqlite:///"))
    limit = database.stat().st_size + 64 * 1024
    assert big.stat().st_size > limit

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    env = {**os.environ, "DATABASE_URL": one_app.config["SQLALCHEMY_DATABASE_URI"]}
    env |= {"PYTHONPATH": str(ROOT), "NDCG_INSTANCE_PATH": str(tmp_path / "instance")}
    done = subprocess.run(
        [sys.executable, "-m", "flask", "--app", "app", "restore", str(big)],
        cwd=ROOT, env=env, preexec_fn=small_files, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("Error:") and "Traceback" not in done.stderr, done.stderr
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "filler" not in tables and "alembic_version" in tables
