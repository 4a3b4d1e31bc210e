"""Batched, idempotent upserts of parsed import records (executemany, no ORM object per row).

New rows, the bulk of a big import, go straight to the DB-API cursor's executemany inside the
session's transaction: SQLAlchemy's per-row parameter processing cost more than the database
itself (a 90 MB import took 2.5x as long). Constant values (timestamps) are converted once
with the column type's own bind processor, so they are stored exactly as the ORM stores them.
Updates, rare and small, go through Core.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import QrelRecord, QueryRecord, natural_key
from ndcg_labeler.models import Chunk, Judgment, JudgmentEvent, Pair, Query, TestSet, utcnow
from ndcg_labeler.services._db import bump_versions, insert_many
from ndcg_labeler.services._progress import Progress, no_progress
from ndcg_labeler.services.accounts import import_source

BATCH = 5000

_query = Query.__table__
_chunk = Chunk.__table__
_pair = Pair.__table__
_judgment = Judgment.__table__
_event = JudgmentEvent.__table__


@dataclass
class Counts:
    """How many records an import created, changed and found already as they were."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def __str__(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged"


def execute_many(stmt: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Run one Core statement over many parameter sets, BATCH rows at a time."""
    for begin in range(0, len(rows), BATCH):
        db.session.execute(stmt, list(rows[begin : begin + BATCH]))


def bind_value(value: Any, type_: sa.types.TypeEngine[Any]) -> Any:
    """`value` as the current dialect's driver expects it for a column of `type_`."""
    dialect = db.session.connection().dialect
    process = type_.dialect_impl(dialect).bind_processor(dialect)
    return process(value) if process is not None and value is not None else value


class Writer:
    """Writes one import into one test set inside the caller's transaction."""

    def __init__(
        self, test_set: TestSet, actor_id: int | None, progress: Progress = no_progress
    ) -> None:
        self.test_set = test_set
        self.ts = test_set.id
        self.actor_id = actor_id
        self.progress = progress
        # Set by the caller once parsing is done: records to write, and records parsed (the
        # job's row count, so that rows per second is records imported per second).
        self.total = 0
        self.rows = 0
        self.done = 0

    def advance(self, n: int) -> None:
        """Count `n` more records written and report it (phase "write"); may raise Cancelled."""
        self.done += n
        self.progress("write", min(self.done, self.total), self.total, self.rows)

    def known_qids(self) -> set[str]:
        """The qids the test set already has."""
        return set(db.session.scalars(sa.select(Query.qid).where(Query.test_set_id == self.ts)))

    def _query_ids(self) -> dict[str, int]:
        rows = db.session.execute(
            sa.select(_query.c.qid, _query.c.id).where(_query.c.test_set_id == self.ts)
        )
        return dict(rows.all())

    def _chunk_ids(self, wanted: Iterable[str]) -> dict[str, int]:
        """docid -> id of the test set's chunks among `wanted` (see chunk_ids)."""
        return chunk_ids(self.ts, wanted)

    def upsert_queries(self, records: list[QueryRecord]) -> Counts:
        """Insert new qids, update changed texts; a narrative missing from the file is kept."""
        existing = {
            qid: (qid_id, text, narrative)
            for qid, qid_id, text, narrative in db.session.execute(
                sa.select(_query.c.qid, _query.c.id, _query.c.text, _query.c.narrative).where(
                    _query.c.test_set_id == self.ts
                )
            ).all()
        }
        counts = Counts()
        new, changed = [], []
        for r in records:
            current = existing.get(r.qid)
            if current is None:
                new.append((self.ts, r.qid, r.text, r.narrative, natural_key(r.qid)))
                continue
            narrative = r.narrative if r.narrative is not None else current[2]
            if (r.text, narrative) == current[1:]:
                counts.unchanged += 1
            else:
                changed.append({"b_id": current[0], "b_text": r.text, "b_narrative": narrative})
        columns = ("test_set_id", "qid", "text", "narrative", "sort_key")
        insert_many(_query, columns, new, self.advance)
        execute_many(
            sa.update(_query)
            .where(_query.c.id == sa.bindparam("b_id"))
            .values(text=sa.bindparam("b_text"), narrative=sa.bindparam("b_narrative")),
            changed,
        )
        counts.created, counts.updated = len(new), len(changed)
        self.advance(len(records) - len(new))
        return counts

    def add_missing_chunks(self, docids: Iterable[str]) -> int:
        """Create chunks without text for docids no corpus provided; returns how many."""
        named = list(dict.fromkeys(docids))
        existing = self._chunk_ids(named)
        missing = [d for d in named if d not in existing]
        rows = [(self.ts, d, natural_key(d)) for d in missing]
        insert_many(_chunk, ("test_set_id", "docid", "sort_key"), rows)
        return len(missing)

    def upsert_pairs(self, pairs: dict[tuple[str, str], tuple[int, str]]) -> Counts:
        """Add pool pairs; an existing pair keeps its source and takes the lower priority."""
        qids, docids = self._query_ids(), self._chunk_ids(docid for _, docid in pairs)
        existing = {
            (q, c): (pair_id, priority)
            for pair_id, q, c, priority in db.session.execute(
                sa.select(_pair.c.id, _pair.c.query_id, _pair.c.chunk_id, _pair.c.priority).where(
                    _pair.c.test_set_id == self.ts
                )
            ).all()
        }
        counts = Counts()
        new, changed = [], []
        created = bind_value(utcnow(), _pair.c.created_at.type)
        for (qid, docid), (priority, source) in pairs.items():
            key = (qids[qid], docids[docid])
            current = existing.get(key)
            if current is None:
                new.append((self.ts, key[0], key[1], source, priority, created))
            elif priority < current[1]:
                changed.append({"b_id": current[0], "b_priority": priority})
            else:
                counts.unchanged += 1
        insert_many(
            _pair,
            ("test_set_id", "query_id", "chunk_id", "source", "priority", "created_at"),
            new,
            self.advance,
        )
        execute_many(
            sa.update(_pair)
            .where(_pair.c.id == sa.bindparam("b_id"))
            .values(priority=sa.bindparam("b_priority")),
            changed,
        )
        counts.created, counts.updated = len(new), len(changed)
        self.advance(len(pairs) - len(new))
        return counts

    def upsert_judgments(self, records: list[QrelRecord], source: str, note: str) -> Counts:
        """Store qrels as the source's judgments, append history, bump labels_version."""
        annotator_id = import_source(source).id
        qids, docids = self._query_ids(), self._chunk_ids(r.docid for r in records)
        existing = self._judgments_of(annotator_id)
        counts = Counts()
        new, changed, events = [], [], []
        now = utcnow()
        stamp = bind_value(now, _judgment.c.created_at.type)
        for r in records:
            key = (qids[r.qid], docids[r.docid])
            current = existing.get(key)
            if current is not None and current[1:] == ("graded", r.grade):
                counts.unchanged += 1
                continue
            if current is None:
                new.append((self.ts, *key, annotator_id, r.grade, stamp))
            else:
                changed.append({"b_id": current[0], "b_grade": r.grade})
            old_status, old_grade = current[1:] if current else (None, None)
            events.append(
                (self.ts, *key, self.actor_id, annotator_id, old_status, old_grade, r.grade, stamp)
            )
        self._insert_judgments(new)
        execute_many(
            sa.update(_judgment)
            .where(_judgment.c.id == sa.bindparam("b_id"))
            .values(status="graded", grade=sa.bindparam("b_grade"), updated_at=now),
            changed,
        )
        self._append_events(events, note)
        if events:
            bump_versions(self.ts, labels=True)
        counts.created, counts.updated = len(new), len(changed)
        self.advance(len(records) - len(new))
        return counts

    def _judgments_of(
        self, annotator_id: int
    ) -> dict[tuple[int, int], tuple[int, str, int | None]]:
        """The source's stored judgments: (query id, chunk id) -> (id, status, grade)."""
        rows = db.session.execute(
            sa.select(
                _judgment.c.query_id,
                _judgment.c.chunk_id,
                _judgment.c.id,
                _judgment.c.status,
                _judgment.c.grade,
            ).where(_judgment.c.test_set_id == self.ts, _judgment.c.annotator_id == annotator_id)
        )
        return {(q, c): (judgment_id, status, grade) for q, c, judgment_id, status, grade in rows}

    def _insert_judgments(self, rows: list[tuple[Any, ...]]) -> None:
        """Insert new graded judgments (test set, query, chunk, annotator, grade, stamp)."""
        # created_at == updated_at; status graded; no note, no active time.
        columns = ("test_set_id", "query_id", "chunk_id", "annotator_id", "grade", "created_at")
        insert_many(
            _judgment,
            (*columns, "updated_at", "status", "note", "active_ms"),
            [(*row, row[-1], "graded", "", 0) for row in rows],
            self.advance,
        )

    def _append_events(self, rows: list[tuple[Any, ...]], note: str) -> None:
        """Append the judgments' history: one `judgment` event per new or changed grade."""
        columns = (
            "test_set_id",
            "query_id",
            "chunk_id",
            "actor_id",
            "annotator_id",
            "old_status",
            "old_grade",
            "new_grade",
            "created_at",
        )
        insert_many(
            _event,
            (*columns, "kind", "new_status", "note"),
            [(*row, "judgment", "graded", note) for row in rows],
        )


def chunk_ids(test_set_id: int, wanted: Iterable[str]) -> dict[str, int]:
    """docid -> id of the test set's chunks among `wanted`, looked up BATCH at a time (a
    corpus may have millions of chunks: never load them all)."""
    names = list(dict.fromkeys(wanted))
    found: dict[str, int] = {}
    for begin in range(0, len(names), BATCH):
        batch = names[begin : begin + BATCH]
        rows = db.session.execute(
            sa.select(_chunk.c.docid, _chunk.c.id).where(
                _chunk.c.test_set_id == test_set_id, _chunk.c.docid.in_(batch)
            )
        )
        for docid, chunk_id in rows:
            found[str(docid)] = int(chunk_id)
    return found
