"""SQLite page size: new databases get 16 KB pages, older ones keep theirs, restore bridges them."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from ndcg_labeler.extensions import db
from ndcg_labeler.sqlite import PAGE_SIZE
from tests.factory import build_team, make_app, make_user
from tests.maintenance.test_backup import _dump, _file, sqlite_app  # noqa: F401 (fixture)


def _pragma(path: Path, name: str) -> object:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]


def _repage(path: Path, size: int) -> None:
    """Rewrite a SQLite file with pages of `size` bytes (as a database made before would be)."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute(f"PRAGMA page_size={size}")
        conn.execute("VACUUM")
    assert _pragma(path, "page_size") == size


def test_a_new_database_gets_16_kb_pages(sqlite_template: Path) -> None:
    assert PAGE_SIZE == 16384
    assert _pragma(sqlite_template, "page_size") == PAGE_SIZE
    assert _pragma(sqlite_template, "journal_mode") == "wal"


def test_a_database_made_with_4_kb_pages_keeps_them_and_works(
    tmp_path: Path, sqlite_template: Path
) -> None:
    path = tmp_path / "old.sqlite3"
    shutil.copy(sqlite_template, path)
    _repage(path, 4096)
    app = make_app(tmp_path / "old", f"sqlite:///{path}")
    make_user(app, "dora")
    build_team(app)
    with app.app_context():
        db.engine.dispose()
    assert _pragma(path, "page_size") == 4096
    assert _pragma(path, "journal_mode") == "wal"
    assert _pragma(path, "integrity_check") == "ok"
    assert "dora" in [row[1] for row in _dump(path)["user"]]


def test_restore_takes_a_backup_whose_pages_differ(sqlite_app, tmp_path: Path) -> None:  # noqa: F811
    """SQLite refuses to copy into a WAL database with other pages: restore must get round it
    (a backup made before the page size changed, restored on a new installation)."""
    source = sqlite_app("source")
    make_user(source, "dora")
    build_team(source)
    before = _dump(_file(source))
    backup_file = tmp_path / "old-backup.sqlite3"
    assert source.test_cli_runner().invoke(args=["backup", str(backup_file)]).exit_code == 0
    _repage(backup_file, 4096)

    target = sqlite_app("target")
    result = target.test_cli_runner().invoke(args=["restore", str(backup_file)])
    assert result.exit_code == 0, result.output
    path = _file(target)
    after = _dump(path)
    assert {t: rows for t, rows in after.items() if t != "audit_event"} == {
        t: rows for t, rows in before.items() if t != "audit_event"
    }
    assert _pragma(path, "page_size") == 4096
    assert _pragma(path, "journal_mode") == "wal"
    make_user(target, "erin")  # the restored database takes writes
    assert "erin" in [row[1] for row in _dump(path)["user"]]


def test_restore_across_page_sizes_says_so_when_the_database_is_in_use(
    sqlite_app,  # noqa: F811
    tmp_path: Path,
) -> None:
    source = sqlite_app("source")
    backup_file = tmp_path / "old-backup.sqlite3"
    assert source.test_cli_runner().invoke(args=["backup", str(backup_file)]).exit_code == 0
    _repage(backup_file, 4096)
    target = sqlite_app("target")
    path = _file(target)
    with closing(sqlite3.connect(path)) as server:  # another process's open read
        server.execute("BEGIN")
        server.execute("SELECT count(*) FROM user").fetchone()
        result = target.test_cli_runner().invoke(args=["restore", str(backup_file)])
    assert result.exit_code == 1
    assert "is in use" in result.output and "stop the server and the job worker" in result.output
    assert _pragma(path, "page_size") == PAGE_SIZE  # left as it was
