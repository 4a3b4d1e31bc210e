"""Batched, idempotent upserts of parsed import records (Core executemany, no ORM per row)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats.records import ChunkRecord, QrelRecord, QueryRecord
from ndcg_labeler.models import Chunk, Judgment, JudgmentEvent, Pair, Query, TestSet
from ndcg_labeler.models._common import utcnow
from ndcg_labeler.services.users import import_source

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


def _executemany(stmt: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Run one statement over many parameter sets, BATCH rows at a time."""
    for begin in range(0, len(rows), BATCH):
        db.session.execute(stmt, list(rows[begin : begin + BATCH]))


class Writer:
    """Writes one import into one test set inside the caller's transaction."""

    def __init__(self, test_set: TestSet, actor_id: int | None) -> None:
        self.test_set = test_set
        self.ts = test_set.id
        self.actor_id = actor_id

    def known_qids(self) -> set[str]:
        """The qids the test set already has."""
        return set(db.session.scalars(sa.select(Query.qid).where(Query.test_set_id == self.ts)))

    def _query_ids(self) -> dict[str, int]:
        rows = db.session.execute(
            sa.select(_query.c.qid, _query.c.id).where(_query.c.test_set_id == self.ts)
        )
        return dict(rows.all())

    def _chunk_ids(self) -> dict[str, int]:
        rows = db.session.execute(
            sa.select(_chunk.c.docid, _chunk.c.id).where(_chunk.c.test_set_id == self.ts)
        )
        return dict(rows.all())

    def upsert_queries(self, records: list[QueryRecord]) -> Counts:
        """Insert new qids, update changed texts; a narrative missing from the file is kept."""
        existing = {
            qid: (qid_id, text, narrative)
            for qid, qid_id, text, narrative in db.session.execute(
                sa.select(_query.c.qid, _query.c.id, _query.c.text, _query.c.narrative).where(
                    _query.c.test_set_id == self.ts
                )
            )
        }
        counts = Counts()
        new, changed = [], []
        for r in records:
            current = existing.get(r.qid)
            if current is None:
                new.append(
                    {"test_set_id": self.ts, "qid": r.qid, "text": r.text, "narrative": r.narrative}
                )
                continue
            narrative = r.narrative if r.narrative is not None else current[2]
            if (r.text, narrative) == current[1:]:
                counts.unchanged += 1
            else:
                changed.append({"b_id": current[0], "b_text": r.text, "b_narrative": narrative})
        _executemany(sa.insert(_query), new)
        _executemany(
            sa.update(_query)
            .where(_query.c.id == sa.bindparam("b_id"))
            .values(text=sa.bindparam("b_text"), narrative=sa.bindparam("b_narrative")),
            changed,
        )
        counts.created, counts.updated = len(new), len(changed)
        return counts

    def upsert_chunks(self, records: list[ChunkRecord]) -> Counts:
        """Insert new docids, fill chunks that had no text, update changed ones."""
        existing = {
            docid: (chunk_id, title, text, meta)
            for docid, chunk_id, title, text, meta in db.session.execute(
                sa.select(
                    _chunk.c.docid, _chunk.c.id, _chunk.c.title, _chunk.c.text, _chunk.c["metadata"]
                ).where(_chunk.c.test_set_id == self.ts)
            )
        }
        counts = Counts()
        new, changed = [], []
        for r in records:
            meta = r.metadata or None
            current = existing.get(r.docid)
            if current is None:
                new.append(
                    {
                        "test_set_id": self.ts,
                        "docid": r.docid,
                        "title": r.title,
                        "text": r.text,
                        "metadata": meta,
                    }
                )
            elif (r.title, r.text, meta) == current[1:]:
                counts.unchanged += 1
            else:
                changed.append(
                    {"b_id": current[0], "b_title": r.title, "b_text": r.text, "b_meta": meta}
                )
        _executemany(sa.insert(_chunk), new)
        _executemany(
            sa.update(_chunk)
            .where(_chunk.c.id == sa.bindparam("b_id"))
            .values(
                title=sa.bindparam("b_title"),
                text=sa.bindparam("b_text"),
                metadata=sa.bindparam("b_meta", type_=sa.JSON),
            ),
            changed,
        )
        counts.created, counts.updated = len(new), len(changed)
        return counts

    def add_missing_chunks(self, docids: Iterable[str]) -> int:
        """Create chunks without text for docids no corpus provided; returns how many."""
        existing = self._chunk_ids()
        missing = [d for d in dict.fromkeys(docids) if d not in existing]
        _executemany(
            sa.insert(_chunk),
            [
                {"test_set_id": self.ts, "docid": d, "title": None, "text": None, "metadata": None}
                for d in missing
            ],
        )
        return len(missing)

    def upsert_pairs(self, pairs: dict[tuple[str, str], tuple[int, str]]) -> Counts:
        """Add pool pairs; an existing pair keeps its source and takes the lower priority."""
        qids, docids = self._query_ids(), self._chunk_ids()
        existing = {
            (q, c): (pair_id, priority)
            for pair_id, q, c, priority in db.session.execute(
                sa.select(_pair.c.id, _pair.c.query_id, _pair.c.chunk_id, _pair.c.priority).where(
                    _pair.c.test_set_id == self.ts
                )
            )
        }
        counts = Counts()
        new, changed = [], []
        for (qid, docid), (priority, source) in pairs.items():
            key = (qids[qid], docids[docid])
            current = existing.get(key)
            if current is None:
                new.append(
                    {
                        "test_set_id": self.ts,
                        "query_id": key[0],
                        "chunk_id": key[1],
                        "source": source,
                        "priority": priority,
                    }
                )
            elif priority < current[1]:
                changed.append({"b_id": current[0], "b_priority": priority})
            else:
                counts.unchanged += 1
        _executemany(sa.insert(_pair), new)
        _executemany(
            sa.update(_pair)
            .where(_pair.c.id == sa.bindparam("b_id"))
            .values(priority=sa.bindparam("b_priority")),
            changed,
        )
        counts.created, counts.updated = len(new), len(changed)
        return counts

    def upsert_judgments(self, records: list[QrelRecord], source: str, note: str) -> Counts:
        """Store qrels as the source's judgments, append history, bump labels_version."""
        annotator_id = import_source(source).id
        qids, docids = self._query_ids(), self._chunk_ids()
        existing = {
            (q, c): (judgment_id, status, grade)
            for judgment_id, q, c, status, grade in db.session.execute(
                sa.select(
                    _judgment.c.id,
                    _judgment.c.query_id,
                    _judgment.c.chunk_id,
                    _judgment.c.status,
                    _judgment.c.grade,
                ).where(
                    _judgment.c.test_set_id == self.ts, _judgment.c.annotator_id == annotator_id
                )
            )
        }
        counts = Counts()
        new, changed, events = [], [], []
        now = utcnow()
        for r in records:
            key = (qids[r.qid], docids[r.docid])
            current = existing.get(key)
            if current is not None and current[1:] == ("graded", r.grade):
                counts.unchanged += 1
                continue
            if current is None:
                new.append(
                    {
                        "test_set_id": self.ts,
                        "query_id": key[0],
                        "chunk_id": key[1],
                        "annotator_id": annotator_id,
                        "status": "graded",
                        "grade": r.grade,
                        "note": "",
                        "active_ms": 0,
                        "created_at": now,
                        "updated_at": now,
                    }
                )
            else:
                changed.append({"b_id": current[0], "b_grade": r.grade})
            events.append(
                {
                    "test_set_id": self.ts,
                    "query_id": key[0],
                    "chunk_id": key[1],
                    "actor_id": self.actor_id,
                    "annotator_id": annotator_id,
                    "kind": "judgment",
                    "old_status": current[1] if current else None,
                    "new_status": "graded",
                    "old_grade": current[2] if current else None,
                    "new_grade": r.grade,
                    "note": note,
                    "created_at": now,
                }
            )
        _executemany(sa.insert(_judgment), new)
        _executemany(
            sa.update(_judgment)
            .where(_judgment.c.id == sa.bindparam("b_id"))
            .values(status="graded", grade=sa.bindparam("b_grade"), updated_at=now),
            changed,
        )
        _executemany(sa.insert(_event), events)
        if events:
            # A SQL increment, so a concurrent grade elsewhere is not lost.
            db.session.execute(
                sa.update(TestSet)
                .where(TestSet.id == self.ts)
                .values(labels_version=TestSet.labels_version + 1)
            )
        counts.created, counts.updated = len(new), len(changed)
        return counts
