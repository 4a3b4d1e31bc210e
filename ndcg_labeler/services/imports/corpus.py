"""Stream a corpus into a test set: parse in blocks, write in batches, memory bounded.

A corpus may hold millions of chunks, so nothing here grows with it: records are read BLOCK at
a time and written at once, inside the import's one transaction (a bad line anywhere, or a
cancel, rolls all of it back: all or nothing without a copy of the text in a staging table).
What must remember the whole file lives in temporary tables of the transaction's connection:
the docids seen so far with their lines (a repeated docid is refused at its line, naming the
first one) and, for `only_referenced`, the docids the test set's pools, qrels and runs name.

The full-text index is built after the rows on SQLite: FTS5's per-row trigger cost ~90 µs a
chunk, four times the rest of the import; the trigger is dropped for the import's duration and
the new rows are indexed by INSERT ... SELECT at the end (INDEX_BATCH ids a statement), then the
trigger is put back exactly as it was, all in the same transaction (a rollback restores it too;
nobody else can write meanwhile, since the import holds SQLite's write lock). PostgreSQL keeps
its GIN index: building it afterwards costs as much there (bench/README.md), and dropping it
would lock the chunk table for every test set.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ndcg_labeler import sqlite
from ndcg_labeler.extensions import db
from ndcg_labeler.formats import (
    ChunkRecord,
    FormatError,
    natural_key,
    pick_corpus,
    read_corpus_numbered,
)
from ndcg_labeler.models import Chunk
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services._db import insert_many
from ndcg_labeler.services._progress import Progress, position, size_of
from ndcg_labeler.services.imports import bulk
from ndcg_labeler.services.imports.write import Counts, execute_many

MAX_DOCID = 300  # the column's width (parse.MAX_DOCID)
BLOCK = 5000
"""Records parsed, checked and written together (also the progress and cancel interval)."""
INDEX_BATCH = 20000
"""Chunk ids indexed per statement once the rows are written (SQLite)."""
FTS_BULK = {"hashsize": 64 * 1024 * 1024, "automerge": 16}
"""FTS5 settings while the new rows are indexed: 64 MB of terms gathered before a segment is
written (the default is 1 MB) and 16 segments of a level before they are merged (4). Indexing
1M chunks took 34 s with the defaults and 21 s with these; a search of the result as fast."""
FTS_DEFAULTS = {"hashsize": 1024 * 1024, "automerge": 4}
"""FTS5's own defaults, put back afterwards (the settings are stored in the index's table)."""
ANALYZE_SHARE = 0.1
"""The chunk table's statistics are refreshed before the commit when the import adds at least
this share of the rows they counted (autovacuum's own default share), or they have none."""

_chunk = Chunk.__table__
_temp = sa.MetaData()
# Temporary tables: the connection's own, dropped at the end (PostgreSQL also at commit).
_seen = sa.Table(
    "corpus_import_seen",
    _temp,
    sa.Column("docid", sa.String(300), primary_key=True),
    sa.Column("line", sa.BigInteger, nullable=False),
    prefixes=["TEMPORARY"],
    postgresql_on_commit="DROP",
)
_referenced = sa.Table(
    "corpus_import_referenced",
    _temp,
    sa.Column("docid", sa.String(300), nullable=False, index=True),
    prefixes=["TEMPORARY"],
    postgresql_on_commit="DROP",
)


@dataclass
class CorpusResult:
    """What streaming a corpus did: the chunks' counts and those left out as unreferenced."""

    counts: Counts
    skipped: int = 0
    rows: int = 0


def _fts_trigger() -> str | None:
    """On SQLite, the SQL of migration 0010's full-text insert trigger (None elsewhere)."""
    if db.session.connection().dialect.name != "sqlite":
        return None
    found = db.session.scalar(
        sa.text("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'chunk_fts_ai'")
    )
    return str(found) if found else None


def _fts_settings(settings: dict[str, int]) -> None:
    """Set FTS5 options of the chunk index (in the import's transaction: a rollback undoes
    them). An SQLite too old to know one leaves it at its default."""
    for name, value in settings.items():
        try:
            with db.session.begin_nested():
                db.session.execute(
                    sa.text("INSERT INTO chunk_fts(chunk_fts, rank) VALUES (:name, :value)"),
                    {"name": name, "value": value},
                )
        except sa.exc.OperationalError:
            continue


def _refresh_statistics(added: int) -> None:
    """PostgreSQL: ANALYZE the chunk table inside the import's transaction when the import
    added at least ANALYZE_SHARE of the rows its statistics counted (or they have none).

    Without statistics the planner takes the test set's rows for a few: it ANDs the full-text
    bitmap with the (test_set_id) index, or tests to_tsvector on every row of the set (a word
    search at 1M chunks: 4.7 s before, 0.17 s after; at 20,000 chunks 0.8 s before).
    Autovacuum would analyze a minute or more after the commit."""
    if not added or db.session.connection().dialect.name != "postgresql":
        return
    counted = db.session.scalar(
        sa.text("SELECT reltuples FROM pg_class WHERE oid = 'chunk'::regclass")
    )
    if counted is None or added >= ANALYZE_SHARE * max(float(counted), 0):
        db.session.execute(sa.text("ANALYZE chunk"))


def _blocks(records: Iterable[tuple[int, ChunkRecord]]) -> Iterator[list[tuple[int, ChunkRecord]]]:
    block: list[tuple[int, ChunkRecord]] = []
    for item in records:
        block.append(item)
        if len(block) == BLOCK:
            yield block
            block = []
    if block:
        yield block


class CorpusStream:
    """Writes one corpus file into the writer's test set, block by block."""

    def __init__(
        self,
        test_set_id: int,
        filename: str,
        progress: Progress,
        *,
        only_referenced: bool = False,
        wanted: Container[str] | None = None,
    ) -> None:
        self.ts = test_set_id
        self.filename = filename
        self.progress = progress
        # `wanted`: fetch only these docids from a file an earlier import already checked
        # whole (services/imports/fetch.py): only their lines are parsed, none is checked.
        self.wanted = wanted
        self.only_referenced = only_referenced
        self.result = CorpusResult(Counts())
        # The metadata column's bind processor, looked up once (as bind_value does per value).
        dialect = db.session.connection().dialect
        json_type = _chunk.c["metadata"].type
        self._bind_json = json_type.dialect_impl(dialect).bind_processor(dialect)

    def _collect_references(self, named: list[str]) -> None:
        """The docids this import's pool and qrels name (`named`) and those the test set already
        names: its chunks (pools, qrels, an earlier corpus) and every docid its runs rank."""
        insert_many(_referenced, ("docid",), [(docid,) for docid in named])
        db.session.execute(
            sa.insert(_referenced).from_select(
                ["docid"], sa.select(_chunk.c.docid).where(_chunk.c.test_set_id == self.ts)
            )
        )
        for docids in run_service.run_docids(self.ts):
            insert_many(_referenced, ("docid",), [(docid,) for docid in docids])

    def write(self, source: Any, max_bytes: int, named: list[str]) -> CorpusResult:
        """Parse `source` and write its chunks; raise FormatError at the first bad line.

        `named`: the docids this import's pool and qrels name (kept with only_referenced)."""
        with sqlite.bulk_cache(db.session.connection()):
            return self._write(source, max_bytes, named)

    def _write(self, source: Any, max_bytes: int, named: list[str]) -> CorpusResult:
        connection = db.session.connection()
        _seen.create(connection)
        if self.only_referenced:
            _referenced.create(connection)
            self._collect_references(named)
        had_chunks = (
            db.session.scalar(
                sa.select(_chunk.c.id).where(_chunk.c.test_set_id == self.ts).limit(1)
            )
            is not None
        )
        last_id = db.session.scalar(sa.select(sa.func.max(_chunk.c.id))) or 0
        fts = _fts_trigger()
        if fts:
            db.session.execute(sa.text("DROP TRIGGER chunk_fts_ai"))
        total = size_of(source)
        if self.wanted is None:
            records = read_corpus_numbered(
                source, self.filename, max_bytes=max_bytes, check_duplicates=False
            )
        else:
            records = pick_corpus(source, self.filename, self.wanted, max_bytes=max_bytes)
        if self.wanted is None and not self.only_referenced and not had_chunks and bulk.usable():
            # A new corpus: its docids checked by the unique index, and on PostgreSQL a COPY
            # parsed while the server writes (bulk.py).
            def report(rows: int) -> None:
                self.progress("corpus", min(position(source), total), total, rows)

            writer = bulk.BulkWriter(self.ts, self.filename, self._bind_json, report, BLOCK)
            self.result.rows = writer.write(iter(records))
            self.result.counts.created += self.result.rows
            records = iter(())
        for block in _blocks(records):
            if self.wanted is None:
                self._check_repeats(block)
            self._write_block(block, had_chunks)
            self.result.rows += len(block)
            self.progress("corpus", min(position(source), total), total, self.result.rows)
        self.progress("corpus", total, total, self.result.rows)
        if fts:
            self._index_new_rows(last_id)
            db.session.execute(sa.text(fts))
        # Either path, and a run's fetch of left-out chunks: a plan for the grown table.
        _refresh_statistics(self.result.counts.created)
        _seen.drop(connection)
        if self.only_referenced:
            _referenced.drop(connection)
        return self.result

    def _index_new_rows(self, last_id: int) -> None:
        """Index this import's new rows (ids above `last_id`), INDEX_BATCH ids a statement, so
        that progress (phase "index") and cancel reach this minutes-long step too."""
        top = db.session.scalar(sa.select(sa.func.max(_chunk.c.id))) or last_id
        if top > last_id:
            _fts_settings(FTS_BULK)
        insert = sa.text(
            "INSERT INTO chunk_fts(rowid, title, text) SELECT id, title, text FROM chunk "
            "WHERE test_set_id = :ts AND id > :low AND id <= :high"
        )
        for low in range(last_id, top, INDEX_BATCH):
            high = min(low + INDEX_BATCH, top)
            db.session.execute(insert, {"ts": self.ts, "low": low, "high": high})
            self.progress("index", high - last_id, top - last_id, self.result.rows)
        if top > last_id:
            _fts_settings(FTS_DEFAULTS)

    def _check_repeats(self, block: list[tuple[int, ChunkRecord]]) -> None:
        """Refuse the first line whose docid an earlier line had; remember the block's."""
        docids = [record.docid for _, record in block]
        rows = db.session.execute(
            sa.select(_seen.c.docid, _seen.c.line).where(_seen.c.docid.in_(docids))
        )
        earlier: dict[str, int] = {str(docid): int(line) for docid, line in rows}
        for line, record in block:
            if len(record.docid) > MAX_DOCID:
                reason = f"docid '{record.docid[:40]}…' is longer than {MAX_DOCID} characters"
                raise FormatError(self.filename, line, reason)
            first_at = earlier.setdefault(record.docid, line)
            if first_at != line:
                reason = f"docid '{record.docid}' appears twice (first at line {first_at})"
                raise FormatError(self.filename, line, reason)
        insert_many(_seen, ("docid", "line"), [(record.docid, line) for line, record in block])

    def _write_block(self, block: list[tuple[int, ChunkRecord]], had_chunks: bool) -> None:
        """Insert the block's new docids, update its changed chunks."""
        records = [record for _, record in block]
        docids = [record.docid for record in records]
        if self.only_referenced:
            named = set(
                db.session.scalars(
                    sa.select(_referenced.c.docid).where(_referenced.c.docid.in_(docids))
                )
            )
            kept = [record for record in records if record.docid in named]
            self.result.skipped += len(records) - len(kept)
            records = kept
        existing: dict[str, tuple[Any, ...]] = {}
        if had_chunks and records:
            rows = db.session.execute(
                sa.select(
                    _chunk.c.docid, _chunk.c.id, _chunk.c.title, _chunk.c.text, _chunk.c["metadata"]
                ).where(
                    _chunk.c.test_set_id == self.ts, _chunk.c.docid.in_([r.docid for r in records])
                )
            )
            existing = {docid: rest for docid, *rest in rows}
        counts = self.result.counts
        new, changed = [], []
        bind = self._bind_json
        for r in records:
            meta = r.metadata or None
            current = existing.get(r.docid)
            if current is None:
                stored = bind(meta) if meta is not None and bind is not None else meta
                new.append((self.ts, r.docid, r.title, r.text, stored, natural_key(r.docid)))
            elif (r.title, r.text, meta) == tuple(current[1:]):
                counts.unchanged += 1
            else:
                changed.append(
                    {"b_id": current[0], "b_title": r.title, "b_text": r.text, "b_meta": meta}
                )
        columns = ("test_set_id", "docid", "title", "text", "metadata", "sort_key")
        insert_many(_chunk, columns, new)
        execute_many(
            sa.update(_chunk)
            .where(_chunk.c.id == sa.bindparam("b_id"))
            .values(
                title=sa.bindparam("b_title"),
                text=sa.bindparam("b_text"),
                metadata=sa.bindparam("b_meta", type_=sa.JSON),
            ),
            changed,
        )
        counts.created += len(new)
        counts.updated += len(changed)
