"""The "machine vs people" queue: a person's grade two or more steps from a machine grade.

A conflict is kept per (pair, judge, person). It is opened when the person grades (or when a
judge answers a pair people graded), follows the person's grade while open (a grade that no
longer contradicts withdraws it), and is closed by an admin, who says who was right. Imported
qrels are not a person's grade here: the queue is people's feedback on the judges. Archived
judges are left out, as they are everywhere a machine grade is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    Chunk,
    Judge,
    Judgment,
    MachineConflict,
    MachineJudgment,
    Query,
    TestSet,
    User,
    utcnow,
)
from ndcg_labeler.models.users import IMPORT_ROLE
from ndcg_labeler.services import ServiceError, audit

STEPS = 2  # grade steps between a person and a machine that make a conflict
RESOLUTIONS = {"people": "the person was right", "machine": "the machine was right"}


def _machine_grades(
    test_set_id: int, pair: tuple[int, int] | None
) -> dict[tuple[int, int, int], int]:
    """{(query id, chunk id, judge id): the judge's latest readable grade} of judges in use."""
    mj = MachineJudgment
    stmt = (
        sa.select(mj.query_id, mj.chunk_id, mj.judge_id, mj.grade)
        .join(Judge, Judge.id == mj.judge_id)
        .where(mj.test_set_id == test_set_id, mj.status == "labeled", Judge.archived_at.is_(None))
        .order_by(mj.id)
    )
    if pair is not None:
        stmt = stmt.where(mj.query_id == pair[0], mj.chunk_id == pair[1])
    return {(q, c, j): int(g) for q, c, j, g in db.session.execute(stmt)}  # newest wins


def _people_grades(
    test_set_id: int, pair: tuple[int, int] | None
) -> dict[tuple[int, int, int], int]:
    """{(query id, chunk id, annotator id): grade} of people's graded judgments."""
    stmt = (
        sa.select(Judgment.query_id, Judgment.chunk_id, Judgment.annotator_id, Judgment.grade)
        .join(User, User.id == Judgment.annotator_id)
        .where(
            Judgment.test_set_id == test_set_id,
            Judgment.status == "graded",
            User.role != IMPORT_ROLE,
        )
    )
    if pair is not None:
        stmt = stmt.where(Judgment.query_id == pair[0], Judgment.chunk_id == pair[1])
    return {(q, c, a): int(g) for q, c, a, g in db.session.execute(stmt)}


def record_conflicts(test_set_id: int, pair: tuple[int, int] | None = None) -> int:
    """Open, update or withdraw the conflicts of one pair (or of the whole test set) from the
    stored grades; in the caller's transaction. Returns how many are open for it now."""
    machine = _machine_grades(test_set_id, pair)
    if pair is not None and not machine:
        return 0  # no judge graded the pair (most saves): nothing to open or withdraw
    people = _people_grades(test_set_id, pair)
    stmt = sa.select(MachineConflict).where(MachineConflict.test_set_id == test_set_id)
    if pair is not None:
        stmt = stmt.where(MachineConflict.query_id == pair[0], MachineConflict.chunk_id == pair[1])
    stored = {
        (c.query_id, c.chunk_id, c.judge_id, c.annotator_id): c for c in db.session.scalars(stmt)
    }
    by_pair: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for (q, c, judge), grade in machine.items():
        by_pair.setdefault((q, c), []).append((judge, grade))
    wanted: dict[tuple[int, int, int, int | None], tuple[int, int]] = {}
    for (q, c, annotator), human in people.items():
        for judge, grade in by_pair.get((q, c), []):
            if abs(human - grade) >= STEPS:
                wanted[(q, c, judge, annotator)] = (grade, human)
    for key, found in stored.items():
        if key not in wanted and found.resolved_at is None:
            db.session.delete(found)  # the grades no longer contradict: withdrawn
    opened = 0
    for key, (grade, human) in wanted.items():
        found = stored.get(key)
        if found is None:
            q, c, judge, annotator = key
            db.session.add(
                MachineConflict(
                    test_set_id=test_set_id,
                    query_id=q,
                    chunk_id=c,
                    judge_id=judge,
                    annotator_id=annotator,
                    machine_grade=grade,
                    human_grade=human,
                )
            )
        elif (found.machine_grade, found.human_grade) != (grade, human):
            # New grades make a new disagreement: open again, even if it was resolved.
            found.machine_grade, found.human_grade = grade, human
            found.resolved_at, found.resolved_by_id, found.resolution = None, None, ""
        elif found.resolved_at is not None:
            continue
        opened += 1
    db.session.flush()
    return opened


@dataclass(frozen=True)
class ConflictRow:
    """One item of the queue, as the page and the CLI show it."""

    id: int
    qid: str
    query: str
    docid: str
    passage: str
    judge: str
    machine_grade: int
    person: str
    human_grade: int
    reasoning: str
    created_at: datetime
    resolution: str

    def to_json(self) -> dict[str, object]:
        """The CLI's JSON object of one conflict."""
        return {
            "id": self.id,
            "qid": self.qid,
            "docid": self.docid,
            "judge": self.judge,
            "machine_grade": self.machine_grade,
            "person": self.person,
            "human_grade": self.human_grade,
            "steps": abs(self.machine_grade - self.human_grade),
            "resolution": self.resolution or None,
        }


def list_conflicts(test_set: TestSet, *, resolved: bool = False) -> list[ConflictRow]:
    """The open conflicts of the test set (or, with `resolved`, the resolved ones), the
    largest disagreement first, then the oldest."""
    mc = MachineConflict
    latest = (
        sa.select(MachineJudgment.raw_answer)
        .where(
            MachineJudgment.query_id == mc.query_id,
            MachineJudgment.chunk_id == mc.chunk_id,
            MachineJudgment.judge_id == mc.judge_id,
            MachineJudgment.status == "labeled",
        )
        .order_by(MachineJudgment.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    rows = db.session.execute(
        sa.select(
            mc.id,
            Query.qid,
            Query.text,
            Chunk.docid,
            Chunk.text,
            Judge.name,
            mc.machine_grade,
            User.username,
            mc.human_grade,
            latest,
            mc.created_at,
            mc.resolution,
        )
        .join(Query, Query.id == mc.query_id)
        .join(Chunk, Chunk.id == mc.chunk_id)
        .join(Judge, Judge.id == mc.judge_id)
        .outerjoin(User, User.id == mc.annotator_id)
        .where(
            mc.test_set_id == test_set.id,
            mc.resolved_at.is_not(None) if resolved else mc.resolved_at.is_(None),
        )
        .order_by(sa.func.abs(mc.machine_grade - mc.human_grade).desc(), mc.created_at, mc.id)
    )
    return [
        ConflictRow(
            int(i),
            qid,
            query or "",
            docid,
            passage or "",
            judge,
            int(m),
            person or "(deleted user)",
            int(h),
            reasoning or "",
            at,
            resolution or "",
        )
        for i, qid, query, docid, passage, judge, m, person, h, reasoning, at, resolution in rows
    ]


def open_count(test_set: TestSet) -> int:
    """How many conflicts of the test set wait for an admin."""
    return int(
        db.session.scalar(
            sa.select(sa.func.count()).where(
                MachineConflict.test_set_id == test_set.id, MachineConflict.resolved_at.is_(None)
            )
        )
        or 0
    )


def resolve_conflict(
    test_set: TestSet, conflict_id: int, resolution: str, actor: User | None = None
) -> MachineConflict:
    """Close an open conflict, saying who was right; audited."""
    if resolution not in RESOLUTIONS:
        raise ServiceError(f"resolve as {' or '.join(RESOLUTIONS)}, not '{resolution}'")
    found = db.session.get(MachineConflict, conflict_id)
    if found is None or found.test_set_id != test_set.id:
        raise ServiceError(f"no conflict {conflict_id} on this test set")
    if found.resolved_at is not None:
        raise ServiceError("this conflict is resolved already")
    found.resolved_at, found.resolution = utcnow(), resolution
    found.resolved_by_id = actor.id if actor is not None else None
    audit.record(
        actor,
        "machine_conflict.resolve",
        "machine_conflict",
        found.id,
        resolution=resolution,
        machine_grade=found.machine_grade,
        human_grade=found.human_grade,
    )
    db.session.commit()
    return found
