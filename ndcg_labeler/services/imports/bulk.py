"""Stream a new corpus straight into the chunk table, its unique index checking the docids.

The row-by-row path (corpus.py) checks every block's docids against a temporary table of those
seen so far and, on PostgreSQL, waits for the server at every block: a SELECT and an INSERT of
the seen docids, then the chunks' INSERT, so the client's parsing and the server's writing
(most of it the GIN full-text index: to_tsvector and its entries, ~4/5 of the server's time)
take turns on a 2-core machine. Here PostgreSQL gets the parsed rows in one COPY a segment
while the next lines are parsed, so both run at once and the import goes at the server's pace;
SQLite gets them by executemany, a block at a time, without the temporary table (10 of 85
profiled seconds of a 1M-chunk import).

Used when the test set has no chunk yet (a new corpus) and every chunk is kept: then the chunk
table's own unique (test_set_id, docid) constraint finds a repeated docid, for free. A repeat
aborts the segment (rolled back to a savepoint) and is then looked up to name both lines: in
the segment's docids (kept, ~8 MB) and in the rows already written, whose line comes from
their rank among the import's ids (increasing in write order) and the line breakpoints.

PostgreSQL's GIN index stays: dropping it around the load would lock the chunk table of every
test set (and readers would search without it), and building it after the rows costs the
server as much CPU as maintaining it (bench/README.md). All or nothing still holds: every
segment is written in the import's one transaction.
"""

from __future__ import annotations

import bisect
import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import ChunkRecord, FormatError, natural_key
from ndcg_labeler.models import Chunk
from ndcg_labeler.services.imports.write import chunk_ids

SEGMENT_BLOCKS = 20
"""Progress blocks per COPY (and savepoint): 100,000 rows; a repeat's lookup holds their docids."""
MAX_DOCID = 300

_chunk = Chunk.__table__
_COLUMNS = ("test_set_id", "docid", "title", "text", "metadata", "sort_key")


def usable() -> bool:
    """Whether the session's database takes this path: SQLite, or PostgreSQL with psycopg 3
    (COPY from Python rows)."""
    connection = db.session.connection()
    if connection.dialect.name == "sqlite":
        return True
    return connection.dialect.name == "postgresql" and connection.dialect.driver == "psycopg"


@contextlib.contextmanager
def _sink(block: int) -> Iterator[Callable[[tuple[Any, ...]], None]]:
    """A function that writes one chunk row: into a COPY on PostgreSQL; on SQLite into a list
    sent by executemany every `block` rows and when the block ends without an error."""
    names = ", ".join(f'"{c}"' for c in _COLUMNS)
    connection = db.session.connection()
    cursor = connection.connection.cursor()
    with contextlib.closing(cursor):
        if connection.dialect.name == "postgresql":
            with cursor.copy(f"COPY chunk ({names}) FROM STDIN") as copy:
                yield copy.write_row
            return
        sql = f"INSERT INTO chunk ({names}) VALUES ({', '.join('?' * len(_COLUMNS))})"
        rows: list[tuple[Any, ...]] = []

        def put(row: tuple[Any, ...]) -> None:
            rows.append(row)
            if len(rows) == block:
                cursor.executemany(sql, rows)
                rows.clear()

        yield put
        if rows:
            cursor.executemany(sql, rows)


class _Lines:
    """Which file line the n-th written chunk came from, in O(gaps) memory: a corpus file has
    one record a line, so only the places where a line was skipped (blank) are kept."""

    def __init__(self) -> None:
        self._ordinals: list[int] = []
        self._offsets: list[int] = []
        self.count = 0

    def add(self, line: int) -> None:
        """Record the line of the next chunk."""
        offset = line - self.count
        if not self._offsets or self._offsets[-1] != offset:
            self._ordinals.append(self.count)
            self._offsets.append(offset)
        self.count += 1

    def line_of(self, ordinal: int) -> int:
        """The line of the chunk written `ordinal`-th (0-based)."""
        at = bisect.bisect_right(self._ordinals, ordinal) - 1
        return ordinal + self._offsets[at]


class BulkWriter:
    """Writes the records of a new corpus into test set `ts`, a segment at a time."""

    def __init__(
        self,
        ts: int,
        filename: str,
        bind_json: Callable[[Any], Any] | None,
        report: Callable[[int], None],
        every: int,
    ) -> None:
        self.ts = ts
        self.filename = filename
        self._bind = bind_json
        self._report = report
        self._every = every  # rows between progress calls (which may cancel)
        self._lines = _Lines()
        self.rows = 0

    def write(self, records: Iterator[tuple[int, ChunkRecord]]) -> int:
        """Write every record; raise FormatError at the first bad or repeated line. Returns
        the number of chunks written."""
        pending: FormatError | None = None
        while pending is None:
            segment: list[tuple[str, int]] = []
            try:
                pending = self._segment(records, segment)
            except Exception as error:  # only the unique violation is ours; the rest goes on up
                if not _is_repeat(error):
                    raise
                raise self._repeat_error(segment) from None
            if not segment:
                break
        if pending is not None:
            raise pending
        return self.rows

    def _segment(
        self, records: Iterator[tuple[int, ChunkRecord]], segment: list[tuple[str, int]]
    ) -> FormatError | None:
        """Write up to a segment of records under a savepoint; the bad line met, if any (returned
        after the segment so that a repeat on an earlier line is reported first)."""
        pending: FormatError | None = None
        bind = self._bind
        with db.session.begin_nested(), _sink(self._every) as write:
            try:
                for line, r in records:
                    if len(r.docid) > MAX_DOCID:
                        reason = f"docid '{r.docid[:40]}…' is longer than {MAX_DOCID} characters"
                        raise FormatError(self.filename, line, reason)
                    meta = r.metadata or None
                    if meta is not None and bind is not None:
                        meta = bind(meta)
                    # Listed first: SQLite's write may send the block and meet the repeat.
                    segment.append((r.docid, line))
                    write((self.ts, r.docid, r.title, r.text, meta, natural_key(r.docid)))
                    if len(segment) % self._every == 0:
                        self._report(self.rows + len(segment))
                    if len(segment) == self._every * SEGMENT_BLOCKS:
                        break
            except FormatError as error:
                pending = error
        for _, line in segment:
            self._lines.add(line)
        self.rows += len(segment)
        return pending

    def _repeat_error(self, segment: list[tuple[str, int]]) -> FormatError:
        """The FormatError of the segment's first line whose docid came before, in the segment
        or in the rows already written (the segment itself was rolled back)."""
        found = chunk_ids(self.ts, (docid for docid, _ in segment))
        earlier = {docid: self._line_of_id(chunk_id) for docid, chunk_id in found.items()}
        for docid, line in segment:
            first_at = earlier.setdefault(docid, line)
            if first_at != line:
                reason = f"docid '{docid}' appears twice (first at line {first_at})"
                return FormatError(self.filename, line, reason)
        raise RuntimeError("the unique index found a repeated docid that the lookup did not")

    def _line_of_id(self, chunk_id: int) -> int:
        """The line of an already written chunk: its rank among the import's ids."""
        rank = db.session.scalar(
            sa.select(sa.func.count()).where(
                _chunk.c.test_set_id == self.ts, _chunk.c.id < chunk_id
            )
        )
        return self._lines.line_of(int(rank or 0))


def _is_repeat(error: BaseException) -> bool:
    """Whether `error` (possibly wrapped by SQLAlchemy) is the chunk table's unique violation."""
    cause = getattr(error, "orig", error)
    if isinstance(cause, sqlite3.IntegrityError):
        return "chunk.test_set_id, chunk.docid" in str(cause)
    diag = getattr(cause, "diag", None)
    return getattr(cause, "sqlstate", None) == "23505" and (
        diag is None or diag.table_name == "chunk"
    )
