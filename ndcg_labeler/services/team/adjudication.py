"""Adjudication: an admin's final grade for a pair, which scoring uses over every policy.

Setting, changing and removing an adjudication each append a JudgmentEvent (kind
"adjudication", status "adjudicated" while one is in force, None once removed) and bump the test
set's labels_version in the same transaction, so live scores pick the change up and nothing is
ever lost. Race-safe like save_judgment: the row is inserted with ON CONFLICT DO NOTHING first
(which also takes SQLite's write lock), otherwise read back FOR UPDATE before comparing.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Adjudication, Chunk, JudgmentEvent, Query, TestSet, User, utcnow
from ndcg_labeler.services import ServiceError, audit
from ndcg_labeler.services._db import bump_versions, insert_if_absent, transaction
from ndcg_labeler.services.labeling import MAX_NOTE

ADJUDICATED = "adjudicated"


@dataclass(frozen=True)
class AdjudicationResult:
    """What happened: the grade before and after (None: no adjudication) and if it changed."""

    old_grade: int | None
    new_grade: int | None
    changed: bool


def _check(test_set: TestSet, query: Query, chunk: Chunk) -> None:
    if query.test_set_id != test_set.id or chunk.test_set_id != test_set.id:
        raise ServiceError("the query and the chunk must belong to the test set")


def _event(
    test_set: TestSet,
    query: Query,
    chunk: Chunk,
    actor: User,
    old: tuple[int | None, str],
    new: tuple[int | None, str],
) -> None:
    """Append the adjudication's change to the pair's history and bump labels_version."""
    db.session.add(
        JudgmentEvent(
            test_set_id=test_set.id,
            query_id=query.id,
            chunk_id=chunk.id,
            actor_id=actor.id,
            annotator_id=None,
            kind="adjudication",
            old_status=ADJUDICATED if old[0] is not None else None,
            new_status=ADJUDICATED if new[0] is not None else None,
            old_grade=old[0],
            new_grade=new[0],
            note=new[1],
            created_at=utcnow(),
        )
    )
    bump_versions(test_set.id, labels=True)
    audit.record(
        actor,
        "adjudication.set" if new[0] is not None else "adjudication.remove",
        "test_set",
        test_set.id,
        qid=query.qid,
        docid=chunk.docid,
        query_id=query.id,
        chunk_id=chunk.id,
        old_grade=old[0],
        new_grade=new[0],
        note=new[1],
    )


def adjudicate(
    test_set: TestSet, query: Query, chunk: Chunk, grade: int, note: str | None, actor: User
) -> AdjudicationResult:
    """Set (or change) the final grade of a pair; commits. Same grade and note: no change."""
    _check(test_set, query, chunk)
    if not actor.is_admin:
        raise ServiceError("only an admin may adjudicate")
    if isinstance(grade, bool) or not isinstance(grade, int):
        raise ServiceError("a grade is required")
    if not 0 <= grade <= test_set.scale_max:
        raise ServiceError(f"grade {grade} is outside this test set's scale 0–{test_set.scale_max}")
    note = (note or "").strip()
    if len(note) > MAX_NOTE:
        raise ServiceError(f"the note must have at most {MAX_NOTE} characters")
    table = Adjudication.__table__
    now = utcnow()
    with transaction():
        created = bool(
            insert_if_absent(
                Adjudication.__table__,
                [
                    {
                        "test_set_id": test_set.id,
                        "query_id": query.id,
                        "chunk_id": chunk.id,
                        "grade": grade,
                        "note": note,
                        "adjudicator_id": actor.id,
                        "updated_at": now,
                    }
                ],
                ["query_id", "chunk_id"],
            )
        )
        if created:
            old: tuple[int | None, str] = (None, "")
            changed = True
        else:
            row = db.session.execute(
                sa.select(table.c.id, table.c.grade, table.c.note)
                .where(table.c.query_id == query.id, table.c.chunk_id == chunk.id)
                .with_for_update()
            ).one()
            old = (row.grade, row.note)
            changed = old != (grade, note)
            if changed:
                db.session.execute(
                    sa.update(table)
                    .where(table.c.id == row.id)
                    .values(grade=grade, note=note, adjudicator_id=actor.id, updated_at=now)
                )
        if changed:
            _event(test_set, query, chunk, actor, old, (grade, note))
    return AdjudicationResult(old[0], grade, changed)


def remove(
    test_set: TestSet, query: Query, chunk: Chunk, actor: User, note: str | None = ""
) -> AdjudicationResult:
    """Withdraw the pair's adjudication (the policy decides again); commits. None: no change."""
    _check(test_set, query, chunk)
    if not actor.is_admin:
        raise ServiceError("only an admin may adjudicate")
    note = (note or "").strip()[:MAX_NOTE]
    table = Adjudication.__table__
    with transaction():
        # DELETE ... RETURNING: the old grade comes from the row actually removed, so two
        # admins removing at once record one event, not two.
        old = db.session.execute(
            sa.delete(table)
            .where(table.c.query_id == query.id, table.c.chunk_id == chunk.id)
            .returning(table.c.grade)
        ).scalar_one_or_none()
        if old is not None:
            _event(test_set, query, chunk, actor, (old, ""), (None, note))
    return AdjudicationResult(old, None, old is not None)
