"""The database layer's Flask extensions: Flask-SQLAlchemy and (on first need) Flask-Migrate.

The web-only ones (CSRF, login) are in `web_extensions`: commands do not import them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flask import Flask
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import MetaData, event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.pool import Pool

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base whose metadata names every constraint predictably."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


db = SQLAlchemy(model_class=Base)
MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def ensure_migrate(app: Flask) -> None:
    """Attach Flask-Migrate (on first need: importing Alembic costs about 0.4 s of start-up).

    `flask db ...`, the tests and the benchmarks call it; plain requests never need it.
    """
    if "migrate" not in app.extensions:
        from flask_migrate import Migrate

        Migrate(app, db, directory=str(MIGRATIONS))


BUSY_TIMEOUT_MS = 10_000
"""How long an SQLite statement waits for another connection's lock before it fails."""


@contextmanager
def busy_timeout(raw: Any, milliseconds: int) -> Iterator[None]:
    """Inside the block, an SQLite DB-API connection waits at most this long for a lock."""
    raw.execute(f"PRAGMA busy_timeout={int(milliseconds)}")
    try:
        yield
    finally:
        raw.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")


SQLITE_PAGE_SIZE = 16384
"""Page size of a new SQLite database (SQLite's default is 4096). A run is stored as one row
of blobs per query (~19 KB at depth 1,000): two 16 KB pages instead of five, so a 7,000 x 1,000
run's commit and its copy from the write-ahead log take about 0.1 s less (bench/README).
A database created with other pages keeps them (SQLite changes them only on VACUUM)."""


@event.listens_for(Engine, "connect")
def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Turn on WAL, a busy timeout and foreign keys for every SQLite connection (and choose the
    page size of a database not yet created)."""
    module = type(dbapi_connection).__module__
    if not module.startswith("sqlite3"):
        return
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    # Before WAL: once a database is in WAL mode (or holds a table) its page size is fixed.
    cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


AUTOCHECKPOINT = "wal_autocheckpoint"
"""Connection-record info key: wal_autocheckpoint to set back (services._db.large_transaction)."""


@event.listens_for(Pool, "checkin")
def _restore_autocheckpoint(dbapi_connection: Any, record: Any) -> None:
    """A connection returning to the pool gets back the automatic checkpoints it had."""
    previous = record.info.pop(AUTOCHECKPOINT, None) if record is not None else None
    if previous is not None and dbapi_connection is not None:
        dbapi_connection.execute(f"PRAGMA wal_autocheckpoint={int(previous)}")
