"""Small database helpers every area uses: one transaction, atomic version bumps, raw cursors.

The raw-cursor helpers exist for the few paths that move hundreds of thousands of rows: the
DB-API cursor skips SQLAlchemy's per-row objects and per-parameter compilation, which cost
more than the query. They run on the session's own connection, inside its transaction, on
either database; what is particular to SQLite is in `ndcg_labeler.sqlite`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from flask_sqlalchemy.pagination import Pagination

from ndcg_labeler import sqlite
from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import ServiceError

BATCH = 5000
# OFFSET is a signed 64-bit integer in SQLite and PostgreSQL, so a page number is capped well
# below the point where (page - 1) * per_page overflows it; no listing has 2**31 pages.
LAST_PAGE_ASKED = 2**31


@contextmanager
def transaction() -> Iterator[None]:
    """Commit when the block ends; roll back on any exception (interrupts included), re-raised."""
    try:
        yield
        db.session.commit()
    except BaseException:
        db.session.rollback()
        raise


@contextmanager
def large_transaction() -> Iterator[sqlite.Checkpoint]:
    """transaction() for a write of tens of MB (a run upload). Yields a Checkpoint: call its
    `wait()` after the block, before the work is reported done.

    On SQLite the commit would itself copy the whole write from the write-ahead log into the
    database file (its automatic checkpoint), holding the caller about as long again as the
    write. Here the commit skips it and the copy starts in a thread right after, so that the
    caller's next work (scoring the run) overlaps it. Other databases: a plain transaction.
    """
    connection = db.session.connection()
    deferred = sqlite.defer_checkpoint(connection)
    checkpoint = sqlite.Checkpoint()
    with transaction():
        yield checkpoint
    if deferred:
        checkpoint.start(connection.engine)


def bump_versions(test_set_id: int, *, labels: bool = False, runs: bool = False) -> None:
    """Atomically increment a test set's labels_version and/or runs_version.

    A SQL increment, never a read-modify-write in Python, so that a concurrent grade or upload
    in another transaction is not lost. Live pages watch these counters.
    """
    table = TestSet.__table__
    values: dict[str, Any] = {}
    if labels:
        values["labels_version"] = table.c.labels_version + 1
    if runs:
        values["runs_version"] = table.c.runs_version + 1
    if values:
        db.session.execute(sa.update(table).where(table.c.id == test_set_id).values(**values))


def insert_if_absent(
    table: sa.Table, rows: Sequence[dict[str, Any]], keys: Sequence[str]
) -> list[int]:
    """Insert the rows whose unique `keys` are not taken yet; returns the new rows' ids.

    Every row has the same keys.
    Race-safe without a prior SELECT: a row inserted meanwhile by another transaction is simply
    skipped. RETURNING rather than rowcount, since psycopg reports -1 for INSERT ... RETURNING.
    """
    dialect = db.session.get_bind().dialect.name
    # The dialects' insert (ON CONFLICT), imported here: the PostgreSQL dialect module costs
    # ~20 ms of start-up that SQLite never needs.
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    if not rows:
        return []
    # executemany form: compiled once and sent in batches (SQLAlchemy's "insertmanyvalues");
    # a multi-VALUES .values(rows) compiles one bind parameter per cell on every call.
    stmt = insert(table).on_conflict_do_nothing(index_elements=list(keys))
    if "id" not in table.c:  # a natural key (e.g. a sha256): nothing to return
        db.session.execute(stmt, list(rows))
        return []
    return list(db.session.execute(stmt.returning(table.c.id), list(rows)).scalars())


@contextmanager
def driver_cursor(binary: bool = False) -> Iterator[tuple[Any, str]]:
    """The session connection's DB-API cursor and its parameter mark (`?` or `%s`).

    `binary`: on PostgreSQL, results in binary format. A bytea column then arrives as its
    bytes instead of twice as many hex digits the server writes and the client reads back:
    reading a run's 5 MB stored scores took 90 ms as text, 30 ms in binary.
    """
    connection = db.session.connection()
    style = connection.dialect.paramstyle
    if style not in ("qmark", "format", "pyformat"):
        raise RuntimeError(f"unsupported DB-API paramstyle {style}")
    if binary and connection.dialect.name == "postgresql":
        cursor = connection.connection.cursor(binary=True)
    else:
        cursor = connection.connection.cursor()
    try:
        yield cursor, "?" if style == "qmark" else "%s"
    finally:
        cursor.close()


def select_rows(stmt: sa.Select[Any], binary: bool = False) -> list[tuple[Any, ...]]:
    """Rows of a Core SELECT as the driver's tuples (compiled once, no Row objects);
    `binary` as driver_cursor's (for large bytea columns)."""
    compiled = stmt.compile(dialect=db.session.connection().dialect)
    params = compiled.construct_params()
    args: Any = (
        tuple(params[name] for name in compiled.positiontup or ())
        if compiled.positional
        else params
    )
    with driver_cursor(binary) as (cursor, _mark):
        cursor.execute(compiled.string, args)
        return list(cursor.fetchall())


def insert_many(
    table: sa.Table,
    columns: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
    on_batch: Callable[[int], None] | None = None,
) -> None:
    """INSERT rows (tuples in `columns` order) through the DB-API cursor, BATCH at a time.

    `on_batch(n)` is called after each batch with its row count (progress, cancellation).
    """
    if not rows:
        return
    quote = db.session.connection().dialect.identifier_preparer.quote
    with driver_cursor() as (cursor, mark):
        sql = (
            f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) "
            f"VALUES ({', '.join([mark] * len(columns))})"
        )
        for begin in range(0, len(rows), BATCH):
            batch = rows[begin : begin + BATCH]
            cursor.executemany(sql, batch)
            if on_batch is not None:
                on_batch(len(batch))


class _RowsPagination(Pagination):
    """A page of a multi-column SELECT as Row tuples (db.paginate keeps only the first column)."""

    def _query_items(self) -> list[Any]:
        stmt = self._query_args["select"].limit(self.per_page).offset(self._query_offset)
        return list(db.session.execute(stmt))

    def _query_count(self) -> int:
        sub = self._query_args["select"].order_by(None).subquery()
        return int(db.session.scalar(sa.select(sa.func.count()).select_from(sub)) or 0)


class _OpenPagination(Pagination):
    """A page of a SELECT too long to count: one row past the page tells whether another
    follows, and the pager shows "page N" with no last page."""

    more = False

    def _query_items(self) -> list[Any]:
        stmt = self._query_args["select"].limit(self.per_page + 1).offset(self._query_offset)
        rows = list(db.session.scalars(stmt))
        self.more = len(rows) > self.per_page
        return rows[: self.per_page]

    def _query_count(self) -> int:
        return int(self._query_args["lower_bound"]) + 1

    @property
    def at_least(self) -> int:
        """The number of rows the SELECT is known to exceed."""
        return int(self._query_args["lower_bound"])

    @property
    def pages(self) -> int:
        """The pages known so far: this one, and the next when it has rows."""
        return self.page + 1 if self.more else self.page


class _SequencePagination(Pagination):
    """A page of a sequence already in memory (a sorted list or numpy index)."""

    def _query_items(self) -> list[Any]:
        start = self._query_offset
        return list(self._query_args["items"][start : start + self.per_page])

    def _query_count(self) -> int:
        return len(self._query_args["items"])


class _StoredPagination(Pagination):
    """A page whose items and total were stored (see stored_page)."""

    def _query_items(self) -> list[Any]:
        return list(self._query_args["items"])

    def _query_count(self) -> int:
        return int(self._query_args["stored_total"])


def stored_page(
    items: Sequence[Any], page: int, per_page: int, total: int, asked: int | None = None
) -> Pagination:
    """The Pagination of one page computed earlier: its items and the total they came from
    (`asked`: the page number asked for, when the stored page is the last one instead)."""
    args = {"page": page, "per_page": per_page, "max_per_page": None, "error_out": False}
    found = _StoredPagination(items=items, stored_total=total, **args)
    found.asked = page if asked is None else asked
    return found


def read_page(text: str | None, name: str = "page") -> int:
    """A page number as typed in ?page= (blank or absent: 1): a whole number of at least 1,
    else a ServiceError that names `name`. A number past the end is read (capped at
    LAST_PAGE_ASKED): the listing shows its last page and says so (paginate's `asked`)."""
    text = (text or "").strip()
    if not text:
        return 1
    significant = text.lstrip("0")
    if text.isascii() and text.isdigit() and significant:
        # int() of 5,000 digits would be slow, and any 13 digits is past every listing.
        return min(int(significant) if len(significant) <= 12 else LAST_PAGE_ASKED, LAST_PAGE_ASKED)
    raise ServiceError(f"{name} must be a whole number of at least 1, not '{text[:40]}'")


def paginate(
    source: sa.Select[Any] | Sequence[Any],
    page: int,
    per_page: int,
    *,
    rows: bool = False,
    total: int | None = None,
    at_least: int | None = None,
) -> Pagination:
    """One page of a SELECT (entities, or Row tuples with `rows=True`) or of a sequence.

    Flask-SQLAlchemy's Pagination, so that every listing and the one pager macro
    (templates/_macros.html) speak the same object. A page past the end (even past what the
    database can count, ?page=2**64) shows the last one, and `asked` keeps the number asked
    for, so that the pager says there is no such page (read the number with read_page).
    `total`: the SELECT's row count when the caller has it already (not counted again).
    `at_least`: the SELECT has more rows than this, too many to count on every page: the page
    knows only whether a next one exists (its `at_least` is shown instead of a total).
    """

    def make(number: int) -> Pagination:
        args = {"page": number, "per_page": per_page, "max_per_page": None, "error_out": False}
        if not isinstance(source, sa.Select):
            return _SequencePagination(items=source, **args)
        if at_least is not None:
            return _OpenPagination(select=source, lower_bound=at_least, **args)
        if rows:
            return _RowsPagination(select=source, **args)
        if total is not None:
            found = db.paginate(source, count=False, **args)
            found.total = total
            return found
        return db.paginate(source, **args)

    found = make(min(max(1, page), LAST_PAGE_ASKED))
    if found.page > max(found.pages, 1):  # an empty listing's only page is the first
        found = make(max(found.pages, 1))
    found.asked = page
    return found
