"""A run upload on SQLite: its write reaches the database file and the WAL keeps its limit.

The upload's commit skips SQLite's automatic checkpoint and copies the write into the
database file in a thread of its own while the run is scored (services._db.large_transaction).
These are the promises that must survive that: when the upload returns, the run is in the
database file itself (not only in the write-ahead log), the log is emptied unless another
connection is in the way (the upload does not wait for it), and every connection the app keeps
still checkpoints on its own, so the log cannot grow without bound.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services._db import large_transaction
from ndcg_labeler.sqlite import BUSY_TIMEOUT_MS
from tests.factory import build_test_set, make_app

QRELS = [("q1", "d1", 2), ("q2", "d5", 1)]
TREC = "".join(f"q{q} Q0 d{d} {d} {10 - d} sys\n" for q in (1, 2) for d in range(1, 8))
SQLITE_DEFAULT_AUTOCHECKPOINT = (
    1000  # pages (https://sqlite.org/pragma.html#pragma_wal_autocheckpoint)
)


@pytest.fixture
def sqlite_app(tmp_path: Path, sqlite_template: Path) -> Iterator[tuple[Flask, Path]]:
    path = tmp_path / "wal.sqlite3"
    shutil.copy(sqlite_template, path)
    app = make_app(tmp_path, f"sqlite:///{path}")
    with app.app_context():
        build_test_set("wal", {"q1": "first", "q2": "second"}, QRELS)
    yield app, path
    with app.app_context():
        db.engine.dispose()


def _file_only(path: Path, sql: str) -> list[tuple]:
    """Rows as the database file alone holds them (immutable: the WAL is not read)."""
    with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as conn:
        return conn.execute(sql).fetchall()


def _pooled_autocheckpoints(app: Flask) -> list[int]:
    """wal_autocheckpoint of every connection resting in the app's pool."""
    with app.app_context():
        pool = db.engine.pool
        held = [db.engine.connect() for _ in range(max(pool.checkedin(), 1))]  # type: ignore[attr-defined]
        try:
            return [c.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar_one() for c in held]
        finally:
            for connection in held:
                connection.close()


def _upload_bm25(app: Flask, tmp_path: Path) -> float:
    """Upload TREC as run 'bm25' of the test set; the seconds the upload took."""
    run_file = tmp_path / "bm25.trec"
    run_file.write_text(TREC)
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet))
        started = time.monotonic()
        run_service.upload_run(test_set, str(run_file), None, "bm25", None)
        return time.monotonic() - started


def test_an_uploaded_run_is_in_the_database_file_when_the_upload_returns(
    sqlite_app: tuple[Flask, Path], tmp_path: Path
) -> None:
    app, path = sqlite_app
    _upload_bm25(app, tmp_path)
    assert _file_only(path, "SELECT name, num_entries FROM run") == [("bm25", 14)]
    assert _file_only(path, "SELECT count(*) FROM run_query") == [(2,)]
    # Emptied: the next process's first connection has no log to read back.
    assert path.with_name(path.name + "-wal").stat().st_size == 0
    settings = _pooled_autocheckpoints(app)
    assert settings and set(settings) == {SQLITE_DEFAULT_AUTOCHECKPOINT}


def test_a_reader_in_the_way_keeps_the_log_and_does_not_hold_the_upload(
    sqlite_app: tuple[Flask, Path], tmp_path: Path
) -> None:
    app, path = sqlite_app
    reader = sqlite3.connect(path, timeout=0)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM run").fetchall()  # a snapshot from before the upload
    try:
        waited = _upload_bm25(app, tmp_path)
        assert path.with_name(path.name + "-wal").stat().st_size > 0
        assert waited < BUSY_TIMEOUT_MS / 1000 / 2  # not the 10 s a busy statement waits
    finally:
        reader.close()
    with app.app_context():
        assert db.session.scalar(sa.select(Run.name)) == "bm25"


def test_a_large_write_that_fails_leaves_automatic_checkpoints_on(
    sqlite_app: tuple[Flask, Path],
) -> None:
    app, _ = sqlite_app
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet))
        with pytest.raises(RuntimeError), large_transaction():
            db.session.add(Run(test_set_id=test_set.id, name="half", sha256="0" * 64))
            db.session.flush()
            raise RuntimeError("the upload broke off")
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == 0
    settings = _pooled_autocheckpoints(app)
    assert settings and set(settings) == {SQLITE_DEFAULT_AUTOCHECKPOINT}
