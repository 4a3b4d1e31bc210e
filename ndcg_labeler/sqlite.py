"""Everything particular to SQLite: connection settings, lock waits, page size, checkpoints.

The rest of the code reaches the database through SQLAlchemy and never sends a PRAGMA or takes
the driver's connection for SQLite's sake; it calls these functions, which do nothing on other
databases. It sits beside `extensions` (which installs `on_connect` and `on_checkin`) rather
than in services, so that the database layer and the services can both import it downward.
The backup of a SQLite file (services/backup/sqlite.py) works on files with sqlite3 itself and
is not part of this.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

BUSY_TIMEOUT_MS = 10_000
"""How long an SQLite statement waits for another connection's lock before it fails."""

PAGE_SIZE = 16384
"""Page size of a new SQLite database (SQLite's default is 4096). A run is stored as one row
of blobs per query (~19 KB at depth 1,000): two 16 KB pages instead of five, so a 7,000 x 1,000
run's commit and its copy from the write-ahead log take about 0.1 s less (bench/README).
A database created with other pages keeps them (SQLite changes them only on VACUUM)."""

BULK_CACHE_MIB = 256
"""Page cache of a connection while it writes a corpus of millions of rows (SQLite's default
is 2 MiB): the full-text index's segment merges and the unique index's inner pages are read
again and again, and each miss is a lookup in a write-ahead log of gigabytes."""

_AUTOCHECKPOINT = "wal_autocheckpoint"
"""Connection-record info key: the wal_autocheckpoint to set back when the connection returns
to the pool (see defer_checkpoint)."""


_LOWER = "ndcg_lower"
"""The SQL function every SQLite connection gets for `lower`: Python's str.lower."""


class lower(FunctionElement[str]):  # lowercase: it stands for the SQL function
    """lower(x) in SQL. SQLite's own folds ASCII letters only ('Ä' stays 'Ä', so a search
    for a name typed as shown could miss it); there it is Python's str.lower instead."""

    type = sa.String()
    inherit_cache = True


@compiles(lower)
def _lower_default(element: lower, compiler: Any, **kw: Any) -> str:
    return f"lower({compiler.process(element.clauses, **kw)})"


@compiles(lower, "sqlite")
def _lower_sqlite(element: lower, compiler: Any, **kw: Any) -> str:
    return f"{_LOWER}({compiler.process(element.clauses, **kw)})"


def _python_lower(text: object) -> object:
    return text.lower() if isinstance(text, str) else text


def _is_sqlite(connection: sa.Connection) -> bool:
    return connection.dialect.name == "sqlite"


def on_connect(dbapi_connection: Any, _record: Any) -> None:
    """Turn on WAL, a busy timeout and foreign keys for every SQLite connection (and choose the
    page size of a database not yet created); other drivers' connections are left alone."""
    module = type(dbapi_connection).__module__
    if not module.startswith("sqlite3"):
        return
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    # Before WAL: once a database is in WAL mode (or holds a table) its page size is fixed.
    cursor.execute(f"PRAGMA page_size={PAGE_SIZE}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
    dbapi_connection.create_function(_LOWER, 1, _python_lower, deterministic=True)


def on_checkin(dbapi_connection: Any, record: Any) -> None:
    """A connection returning to the pool gets back the automatic checkpoints it had."""
    previous = record.info.pop(_AUTOCHECKPOINT, None) if record is not None else None
    if previous is not None and dbapi_connection is not None:
        dbapi_connection.execute(f"PRAGMA wal_autocheckpoint={int(previous)}")


@contextmanager
def foreign_keys_off(connection: sa.Connection) -> Iterator[None]:
    """Inside the block (the migrations), SQLite does not enforce foreign keys; what the block
    leaves is checked before they are on again.

    Batch mode rebuilds a table by dropping it: with foreign keys on, dropping `user` deletes
    every row that refers to it, the judgments by cascade. The PRAGMA is a no-op inside a
    transaction, hence the commits around it.
    """
    if not _is_sqlite(connection):
        yield
        return
    connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
    connection.commit()
    try:
        yield
        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
        connection.commit()
        if broken:
            table, rowid, parent, _key = broken[0]
            raise RuntimeError(
                f"the migrations left {len(broken)} rows whose foreign key points nowhere "
                f"(first: row {rowid} of {table}, to {parent})"
            )
    finally:
        connection.exec_driver_sql("PRAGMA foreign_keys=ON")
        connection.commit()


@contextmanager
def driver_busy_timeout(raw: Any, milliseconds: int) -> Iterator[None]:
    """Inside the block, an SQLite DB-API connection waits at most this long for a lock."""
    raw.execute(f"PRAGMA busy_timeout={int(milliseconds)}")
    try:
        yield
    finally:
        raw.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")


@contextmanager
def busy_timeout(connection: sa.Connection, milliseconds: int) -> Iterator[None]:
    """Inside the block, the connection waits at most this long for SQLite's write lock
    (work that may skip a turn rather than wait the usual 10 s); nothing elsewhere."""
    if not _is_sqlite(connection):
        yield
        return
    with driver_busy_timeout(connection.connection.driver_connection, milliseconds):
        yield


def set_busy_timeout(connection: sa.Connection, milliseconds: int = BUSY_TIMEOUT_MS) -> None:
    """Make the connection wait at most this long for SQLite's locks from now on (the usual
    wait by default, to give it back); nothing elsewhere."""
    if _is_sqlite(connection):
        connection.exec_driver_sql(f"PRAGMA busy_timeout={int(milliseconds)}")
        connection.commit()


@contextmanager
def bulk_cache(connection: sa.Connection, mib: int = BULK_CACHE_MIB) -> Iterator[None]:
    """Inside the block, an SQLite connection keeps up to `mib` MiB of pages in memory (its
    own cache size given back after); nothing elsewhere."""
    if not _is_sqlite(connection):
        yield
        return
    raw = connection.connection.driver_connection
    previous = int(raw.execute("PRAGMA cache_size").fetchone()[0])
    raw.execute(f"PRAGMA cache_size={-int(mib) * 1024}")
    try:
        yield
    finally:
        raw.execute(f"PRAGMA cache_size={previous}")


class Checkpoint:
    """SQLite's copy of a large commit from the write-ahead log into the database file, run in
    a thread of its own once the commit is done (see defer_checkpoint)."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._engine: sa.Engine | None = None

    def start(self, engine: sa.Engine) -> None:
        """Begin the copy (not a daemon thread: a process that ends meanwhile finishes it)."""
        self._engine = engine
        self._thread = threading.Thread(target=self._run, args=(engine,), name="checkpoint")
        self._thread.start()

    @staticmethod
    def _run(engine: sa.Engine) -> None:
        with engine.connect() as connection:
            # PASSIVE: copies what it can without waiting for (or blocking) readers and writers.
            connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")

    def wait(self) -> None:
        """Return once the copy is done (at once when there was none), the log emptied.

        Left at its size (hundreds of MB after a run), the log would be read whole by the
        first connection of every later process (SQLite rebuilds its index from it) and copied
        again by the next write's checkpoint. Emptying it (TRUNCATE) waits for no one: with a
        reader or writer in the way it is skipped, and a later checkpoint does it.
        """
        if self._thread is None or self._engine is None:
            return
        self._thread.join()
        with self._engine.connect() as connection:
            raw = connection.connection.driver_connection
            with driver_busy_timeout(raw, 0):
                raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def defer_checkpoint(connection: sa.Connection) -> bool:
    """Keep the connection's next commits from copying the write-ahead log into the database
    file (the caller starts a Checkpoint after its commit); True when that applies: a SQLite
    database in a file. The connection gets its automatic checkpoints back in the pool."""
    engine = connection.engine
    if not _is_sqlite(connection) or engine.url.database in (None, "", ":memory:"):
        return False
    raw = connection.connection.driver_connection
    previous = int(raw.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
    raw.execute("PRAGMA wal_autocheckpoint=0")
    connection.connection.info[_AUTOCHECKPOINT] = previous
    return True
