"""Back up and restore a SQLite database with SQLite's online backup API (consistent while in use).

PostgreSQL has its own tools, pg_dump and pg_restore; we refuse there and say so.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import sqlalchemy as sa
from flask import current_app

from ndcg_labeler.extensions import db, ensure_migrate
from ndcg_labeler.services import ServiceError, audit

SQLITE_MAGIC = b"SQLite format 3\x00"
PG_HINT = (
    "this database is PostgreSQL: back it up with `pg_dump -Fc -f FILE DBNAME` and restore it "
    "with `pg_restore --clean --if-exists -d DBNAME FILE` (see the README, Deployment)"
)


def database_path() -> Path:
    """The SQLite file the app uses; ServiceError on PostgreSQL or an in-memory database."""
    url = db.engine.url
    if url.get_backend_name() != "sqlite":
        raise ServiceError(PG_HINT)
    if not url.database or url.database == ":memory:":
        raise ServiceError("the database is in memory; there is no file to back up or restore")
    return Path(url.database)


def backup(target: Path, *, force: bool = False) -> int:
    """Copy the live database into `target` (a new SQLite file); returns its size in bytes.

    Refuses to overwrite an existing file unless `force`. Written to a temporary name first, so
    a half-written backup never carries the final name. Audited once the copy is complete.
    """
    source_path = database_path()
    target = Path(target)
    if target.exists() and not force:
        raise ServiceError(f"{target} exists; pass --force to overwrite it")
    if target.resolve() == source_path.resolve():
        raise ServiceError("the backup file cannot be the database itself")
    if not target.parent.is_dir():
        raise ServiceError(f"{target.parent}: no such folder; create it first")
    partial = target.with_name(target.name + ".partial")
    _remove(partial)
    try:
        with (
            closing(sqlite3.connect(source_path)) as source,
            closing(sqlite3.connect(partial)) as out,
        ):
            source.backup(out)
            # One self-contained file: no -wal next to it.
            out.execute("PRAGMA journal_mode=DELETE")
        os.replace(partial, target)
    except sqlite3.Error as exc:
        _remove(partial)
        raise ServiceError(
            f"could not write the backup {target} ({exc}: is the disk full, or may this user "
            "not write there?); nothing was written"
        ) from None
    except BaseException:
        _remove(partial)
        raise
    size = target.stat().st_size
    audit.record(None, "database.backup", "database", None, file=str(target), bytes=size)
    db.session.commit()
    return size


def _remove(partial: Path) -> None:
    """Delete a partial backup and the rollback journal SQLite may have left beside it."""
    for path in (partial, partial.with_name(partial.name + "-journal")):
        # A path below a file, say, cannot be deleted: there is nothing there.
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def _known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory  # Alembic is slow to import: only restore needs it

    ensure_migrate(current_app)
    migrate = current_app.extensions["migrate"]
    config = migrate.migrate.get_config(migrate.directory)
    return {rev.revision for rev in ScriptDirectory.from_config(config).walk_revisions()}


def check_backup_file(source: Path) -> str:
    """Check that `source` is a SQLite database of our schema; returns its Alembic revision."""
    source = Path(source)
    if not source.is_file():
        raise ServiceError(f"{source}: no such file")
    with source.open("rb") as fh:
        if fh.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
            raise ServiceError(f"{source} is not a SQLite database")
    try:
        with closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as conn:
            if conn.execute("PRAGMA quick_check").fetchone() != ("ok",):
                raise ServiceError(f"{source} is damaged (SQLite quick_check failed)")
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            if "alembic_version" not in tables:
                raise ServiceError(f"{source} is not an ndcg-labeler database (no alembic_version)")
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.DatabaseError as exc:
        raise ServiceError(f"{source} cannot be read as SQLite: {exc}") from None
    if row is None or row[0] not in _known_revisions():
        raise ServiceError(
            f"{source} has schema revision {row and row[0]!r}, unknown to this app: a backup "
            "made by a newer version of ndcg-labeler is restored by that version (upgrade, "
            "then restore)"
        )
    return str(row[0])


def is_empty() -> bool:
    """True when no table of ours holds a row (a freshly migrated database)."""
    for table in db.metadata.sorted_tables:
        if db.session.scalar(sa.select(sa.func.count()).select_from(table)):
            return False
    return True


def _page_size(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA page_size").fetchone()[0])


def _leave_wal(live: sqlite3.Connection, path: Path) -> None:
    """Take the database out of WAL mode, where SQLite refuses a copy whose page size differs
    from the database's (a backup of a database created before ndcg_labeler.sqlite.PAGE_SIZE
    changed); out of it, the copy takes the backup's page size. Needs every other connection
    closed."""
    live.execute("PRAGMA busy_timeout=2000")
    try:
        live.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.OperationalError as exc:
        raise ServiceError(
            f"{path} is in use ({exc}): stop the server and the job worker, then restore again"
        ) from None


class Restored(NamedTuple):
    """What a restore did: the backup's schema revision, and where the overwritten database
    was kept (None when it held nothing)."""

    revision: str
    kept: Path | None


def restore(source: Path, *, force: bool = False) -> Restored:
    """Replace the database with the backup `source`.

    Refuses on a database that holds data unless `force`, and then first keeps a copy of it
    beside it (`<file>.before-restore-<UTC time>`): a restore of the wrong file, or of an old
    one, would otherwise lose everything done since. Refuses files that are not SQLite
    databases of our schema. Stop the server first: open connections would see the switch.
    """
    target_path = database_path()
    revision = check_backup_file(source)
    kept = None
    if not is_empty():
        if not force:
            raise ServiceError(
                "the database is not empty; pass --force to overwrite it (a copy of it is kept "
                "beside it first)"
            )
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        kept = target_path.with_name(f"{target_path.name}.before-restore-{stamp}")
        # backup() refuses to overwrite, and says why it could not write: then nothing is
        # restored either.
        backup(kept)
    db.session.remove()
    db.engine.dispose()
    uri = f"file:{Path(source).resolve()}?mode=ro"
    with (
        closing(sqlite3.connect(uri, uri=True)) as saved,
        closing(sqlite3.connect(target_path)) as live,
    ):
        if _page_size(saved) != _page_size(live):
            _leave_wal(live, target_path)
        try:
            saved.backup(live)
        except sqlite3.Error as exc:
            # The copy is one transaction of the database's: SQLite rolled it back.
            raise ServiceError(
                f"could not restore {source} into {target_path} ({exc}: is the disk full?); "
                "the database is as it was"
            ) from None
        finally:
            # Back to WAL, also when _leave_wal left it and the copy failed.
            with contextlib.suppress(sqlite3.Error):
                live.execute("PRAGMA journal_mode=WAL")
    details = {"file": str(source), "revision": revision}
    if kept is not None:
        details["kept"] = str(kept)
    audit.record(None, "database.restore", "database", None, **details)
    db.session.commit()
    return Restored(revision, kept)
