"""Adjudication: an admin's final grade for a pair, which scoring uses over every policy.

Setting, changing and removing an adjudication each append a JudgmentEvent (kind
"adjudication", status "adjudicated" while one is in force, None once removed) and bump the test
set's labels_version in the same transaction, so live scores pick the change up and nothing is
ever lost. Race-safe like save_judgment: the row is inserted with ON CONFLICT DO NOTHING first
(which also takes SQLite's write lock), otherwise read back FOR UPDATE before comparing.

No silent override: the page carries what the adjudicator saw of the pair (pair_state, a digest
of its judgments' versions and its latest history event) and a final grade is refused
(GradesChanged, with the grades now) when an answer or the final grade changed since, as
labeling refuses a stale form by its judgment's version.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    Adjudication,
    Chunk,
    Judgment,
    JudgmentEvent,
    Query,
    TestSet,
    User,
    utcnow,
)
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


class GradesChanged(ServiceError):
    """The pair's answers (or its final grade) changed since the adjudicator's page was shown:
    nothing was saved. Carries the answers now, (username, status, grade) by username, and the
    final grade now (None: none); the page shows them and saving again confirms."""

    def __init__(self, grades: list[tuple[str, str, int | None]], final: int | None) -> None:
        self.grades, self.final = grades, final
        shown = ", ".join(f"{name} {_answer(status, grade)}" for name, status, grade in grades)
        now = f"now {shown or 'no answers'}"
        if final is not None:
            now += f"; final grade {final}"
        super().__init__(
            f"the grades of this pair changed since the page was shown ({now}). Nothing was "
            "saved: check the grades and save again to confirm."
        )


def _answer(status: str, grade: int | None) -> str:
    if status == "graded":
        return str(grade)
    return "can't tell" if status == "cant_tell" else "skipped"


def pair_state(query_id: int, chunk_id: int, lock: bool = False) -> str:
    """What a page shows of a pair's answers and final grade, as a short digest: every
    judgment's id and version, and the pair's latest history event (imports and
    adjudications append one without a version). `lock`: FOR UPDATE on the judgments, so no
    answer changes before the caller's transaction ends (SQLite: its write lock does that)."""
    judgments = (
        sa.select(Judgment.id, Judgment.version)
        .where(Judgment.query_id == query_id, Judgment.chunk_id == chunk_id)
        .order_by(Judgment.id)
    )
    if lock:
        judgments = judgments.with_for_update()
    rows = db.session.execute(judgments).all()
    latest = db.session.scalar(
        sa.select(sa.func.max(JudgmentEvent.id)).where(
            JudgmentEvent.query_id == query_id, JudgmentEvent.chunk_id == chunk_id
        )
    )
    text = f"{latest or 0}|" + ",".join(f"{row.id}.{row.version}" for row in rows)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _grades_now(query_id: int, chunk_id: int) -> list[tuple[str, str, int | None]]:
    rows = db.session.execute(
        sa.select(User.username, Judgment.status, Judgment.grade)
        .join(User, User.id == Judgment.annotator_id)
        .where(Judgment.query_id == query_id, Judgment.chunk_id == chunk_id)
        .order_by(User.username)
    )
    return [(name, status, grade) for name, status, grade in rows]


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
    test_set: TestSet,
    query: Query,
    chunk: Chunk,
    grade: int,
    note: str | None,
    actor: User,
    seen: str | None = None,
) -> AdjudicationResult:
    """Set (or change) the final grade of a pair; commits. Same grade and note: no change.

    `seen`: the pair_state the adjudicator's page was rendered with. When it no longer matches
    and this would change the final grade, nothing is saved and GradesChanged says what the
    grades are now ("" never matches: a form that carried nothing). None: no check (a caller
    that showed nothing, such as a script).
    """
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
        # Under locks (SQLite: the write lock the insert took; PostgreSQL: the adjudication's
        # and the answers' rows), so what is compared stays until the commit. Raising rolls
        # the insert back.
        if changed and seen is not None and pair_state(query.id, chunk.id, lock=True) != seen:
            raise GradesChanged(_grades_now(query.id, chunk.id), old[0])
        if changed and not created:
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
