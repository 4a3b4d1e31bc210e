"""Saving judgments: one per (query, chunk, annotator), race-safe, with an append-only history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    Assignment,
    Chunk,
    Judgment,
    JudgmentEvent,
    Pair,
    Query,
    TestSet,
    User,
    utcnow,
)
from ndcg_labeler.models.judgments import STATUSES
from ndcg_labeler.services import ServiceError, accounts, corrections, tallies, testsets
from ndcg_labeler.services._db import bump_versions, insert_if_absent, transaction

MAX_NOTE = 2000
# One sitting on one pair never lasts longer than this; larger values are clock or client bugs.
MAX_ACTIVE_MS = 60 * 60 * 1000

_judgment = Judgment.__table__


@dataclass(frozen=True)
class SaveResult:
    """What save_judgment did: the judgment's id and whether anything changed."""

    judgment_id: int
    changed: bool
    created: bool
    version: int = 1


class Conflict(ServiceError):
    """My judgment changed since the form was rendered (another tab, window or page): nothing
    was saved. Carries what is stored now, so the page can offer to keep it or replace it."""

    def __init__(
        self, status: str, grade: int | None, version: int, updated_at: datetime | None
    ) -> None:
        self.status, self.grade, self.version, self.updated_at = status, grade, version, updated_at
        super().__init__("you changed this judgment elsewhere since this page was shown")


def _clean(
    test_set: TestSet, status: str, grade: int | None, note: str | None, active_ms: int | None
) -> tuple[int | None, str, int]:
    """Validate one verdict; returns (grade, note, active_ms) normalised."""
    if status not in STATUSES:
        raise ServiceError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    if status == "graded":
        if grade is None or isinstance(grade, bool) or not isinstance(grade, int):
            raise ServiceError("a grade is required")
        if not 0 <= grade <= test_set.scale_max:
            raise ServiceError(
                f"grade {grade} is outside this test set's scale 0–{test_set.scale_max}"
            )
    else:
        # "can't tell" and "skipped" carry no grade (a check constraint insists).
        grade = None
    note = (note or "").strip()
    if len(note) > MAX_NOTE:
        raise ServiceError(f"the note must have at most {MAX_NOTE} characters")
    active = min(max(int(active_ms or 0), 0), MAX_ACTIVE_MS)
    return grade, note, active


def save_judgment(
    test_set: TestSet,
    query: Query,
    chunk: Chunk,
    annotator: User,
    *,
    status: str = "graded",
    grade: int | None = None,
    note: str | None = "",
    active_ms: int | None = 0,
    actor: User | None = None,
    expected_version: int | None = None,
    via: str = "queue",
) -> SaveResult:
    """Create or update the annotator's judgment of a pair; commits.

    `via` records where a change came from ("queue", or "drilldown": graded beside a run's
    ranking, which the agreement figures leave out).

    `expected_version` (optimistic concurrency): the version of my judgment the form was
    rendered with, 0 when I had none. When the stored judgment moved on since and this save
    would change it, nothing is saved and Conflict says what is stored. Saving the verdict
    that is already stored never conflicts (a retried or double-clicked save).

    Idempotent: saving the same verdict again changes nothing and appends no event. Every real
    change appends a JudgmentEvent and bumps TestSet.labels_version in the same transaction.
    Race-safe on SQLite and PostgreSQL: the row is inserted with ON CONFLICT DO NOTHING (which
    also takes SQLite's write lock first) and otherwise read back FOR UPDATE before comparing.
    """
    if query.test_set_id != test_set.id or chunk.test_set_id != test_set.id:
        raise ServiceError("the query and the chunk must belong to the test set")
    grade, note, active = _clean(test_set, status, grade, note, active_ms)
    verdict = _Verdict(status, grade, note)
    key = _Key(query.id, chunk.id, annotator.id)
    now = utcnow()
    with transaction():
        created = _insert_if_absent(test_set.id, key, verdict, active, now, via)
        stored = _read_for_update(key)
        if created:
            old, changed, version = _Verdict(None, None, ""), True, stored.version
        else:
            old = _Verdict(stored.status, stored.grade, stored.note)
            changed, version = _update_if_changed(
                stored, verdict, active, now, expected_version, via
            )
        if changed:
            _record_change(test_set.id, key, (actor or annotator).id, old, verdict, now)
            # A grade far from a machine's goes to the admins' queue (or leaves it).
            corrections.record_conflicts(test_set.id, (query.id, chunk.id))
        _release_lease(query.id, chunk.id, annotator.id)
    return SaveResult(judgment_id=stored.id, changed=changed, created=created, version=version)


class _Key(NamedTuple):
    """Which judgment: one per (query, chunk, annotator)."""

    query_id: int
    chunk_id: int
    annotator_id: int


class _Verdict(NamedTuple):
    """What a judgment says (status None: no judgment yet)."""

    status: str | None
    grade: int | None
    note: str


def _insert_if_absent(
    test_set_id: int, key: _Key, verdict: _Verdict, active_ms: int, now: datetime, via: str
) -> bool:
    """Insert the judgment unless it exists; True when this call created it."""
    row = {
        **key._asdict(),
        "test_set_id": test_set_id,
        **verdict._asdict(),
        "active_ms": active_ms,
        "via": via,
        "created_at": now,
        "updated_at": now,
    }
    return bool(insert_if_absent(_judgment, [row], list(_Key._fields)))


def _read_for_update(key: _Key) -> sa.Row[Any]:
    """The stored judgment, locked for the rest of the transaction."""
    table = _judgment
    where = sa.and_(*(table.c[name] == value for name, value in key._asdict().items()))
    columns = ("id", "status", "grade", "note", "version", "updated_at")
    return db.session.execute(
        sa.select(*(table.c[name] for name in columns)).where(where).with_for_update()
    ).one()


def _update_if_changed(
    stored: sa.Row[Any],
    verdict: _Verdict,
    active_ms: int,
    now: datetime,
    expected_version: int | None,
    via: str = "queue",
) -> tuple[bool, int]:
    """Store the verdict over an existing judgment unless it says the same; (changed, version).

    Raises Conflict when the judgment moved on since `expected_version` and the verdict
    would change its status or grade.
    """
    if (stored.status, stored.grade, stored.note) == verdict:
        return False, stored.version
    stale = expected_version is not None and expected_version != stored.version
    if stale and (stored.status, stored.grade) != (verdict.status, verdict.grade):
        raise Conflict(stored.status, stored.grade, stored.version, stored.updated_at)
    table = _judgment
    db.session.execute(
        sa.update(table)
        .where(table.c.id == stored.id)
        .values(
            **verdict._asdict(),
            # Time spent re-grading adds up; a no-op resubmit (double click) does not.
            active_ms=table.c.active_ms + active_ms,
            via=via,
            updated_at=now,
            version=table.c.version + 1,
        )
    )
    return True, stored.version + 1


def _record_change(
    test_set_id: int, key: _Key, actor_id: int, old: _Verdict, new: _Verdict, now: datetime
) -> None:
    """Count the change, append it to the history and bump the labels version."""
    # Stored counters (queue, progress, summary) move in this same transaction.
    tallies.count_judgment_change(test_set_id, *key, old.status, new.status)
    db.session.add(
        JudgmentEvent(
            test_set_id=test_set_id,
            **key._asdict(),
            actor_id=actor_id,
            kind="judgment",
            old_status=old.status,
            new_status=new.status,
            old_grade=old.grade,
            new_grade=new.grade,
            note=new.note,
            created_at=now,
        )
    )
    bump_versions(test_set_id, labels=True)


def _release_lease(query_id: int, chunk_id: int, user_id: int) -> None:
    """Drop the queue's lease on this pair: the annotator has answered it."""
    pair_ids = sa.select(Pair.id).where(Pair.query_id == query_id, Pair.chunk_id == chunk_id)
    db.session.execute(
        sa.delete(Assignment).where(
            Assignment.user_id == user_id, Assignment.pair_id.in_(pair_ids)
        ),
        execution_options={"synchronize_session": False},
    )


def save_for_pair(
    pair: Pair,
    annotator: User,
    *,
    status: str = "graded",
    grade: int | None = None,
    note: str | None = "",
    active_ms: int | None = 0,
    expected_version: int | None = None,
) -> SaveResult:
    """save_judgment for a pool pair (the labeling screens work with pairs)."""
    test_set = db.session.get_one(TestSet, pair.test_set_id)
    query = db.session.get_one(Query, pair.query_id)
    chunk = db.session.get_one(Chunk, pair.chunk_id)
    return save_judgment(
        test_set,
        query,
        chunk,
        annotator,
        status=status,
        grade=grade,
        note=note,
        active_ms=active_ms,
        expected_version=expected_version,
    )


def skip_pair(pair: Pair, annotator: User, note: str = "") -> SaveResult | None:
    """Skip a pair: recorded as `skipped` with `note` unless the annotator already answered it;
    an earlier answer is kept (None), with `note` if one was typed that differs from its own."""
    existing = my_judgment(pair, annotator)
    if existing is not None and existing.status != "skipped":
        typed = note.strip()
        if typed and typed != (existing.note or ""):
            return save_for_pair(
                pair, annotator, status=existing.status, grade=existing.grade, note=typed
            )
        _release_lease(pair.query_id, pair.chunk_id, annotator.id)
        db.session.commit()
        return None
    return save_for_pair(pair, annotator, status="skipped", note=note)


def my_judgment(pair: Pair, annotator: User) -> Judgment | None:
    """The annotator's own judgment of the pair (never anyone else's)."""
    return db.session.scalar(
        sa.select(Judgment).where(
            Judgment.query_id == pair.query_id,
            Judgment.chunk_id == pair.chunk_id,
            Judgment.annotator_id == annotator.id,
        )
    )


def previous_pair(test_set: TestSet, annotator: User, current: Pair | None = None) -> Pair | None:
    """The pair the annotator answered last (before `current` if that one was answered too).

    Walking back from an answered pair goes to the one answered before it, so repeated "back"
    steps through one's recent history instead of bouncing between the last two pairs.
    """
    stmt = (
        sa.select(Pair)
        .join(
            Judgment,
            sa.and_(Judgment.query_id == Pair.query_id, Judgment.chunk_id == Pair.chunk_id),
        )
        .where(Judgment.annotator_id == annotator.id, Judgment.test_set_id == test_set.id)
    )
    if current is not None:
        stmt = stmt.where(Pair.id != current.id)
        mine = my_judgment(current, annotator)
        if mine is not None:
            stmt = stmt.where(
                sa.or_(
                    Judgment.updated_at < mine.updated_at,
                    sa.and_(Judgment.updated_at == mine.updated_at, Judgment.id < mine.id),
                )
            )
    return db.session.scalar(stmt.order_by(Judgment.updated_at.desc(), Judgment.id.desc()).limit(1))


def judge_by_names(
    test_set_name: str, qid: str, docid: str, grade: str | int, username: str
) -> tuple[SaveResult, Judgment]:
    """Set one grade addressed by external names (for the CLI); ServiceError when unknown."""
    test_set = testsets.require_by_name(test_set_name)
    query = db.session.scalar(
        sa.select(Query).where(Query.test_set_id == test_set.id, Query.qid == qid)
    )
    if query is None:
        raise ServiceError(f"test set '{test_set.name}' has no query '{qid}'")
    chunk = db.session.scalar(
        sa.select(Chunk).where(Chunk.test_set_id == test_set.id, Chunk.docid == docid)
    )
    if chunk is None:
        raise ServiceError(f"test set '{test_set.name}' has no chunk '{docid}'")
    user = accounts.get_by_username(username)
    if user is None or user.is_import_source:
        raise ServiceError(f"unknown user '{username}'")
    try:
        value = int(str(grade).strip())
    except ValueError:
        raise ServiceError(
            f"grade must be a whole number from 0 to {test_set.scale_max}, not '{grade}'"
        ) from None
    result = save_judgment(test_set, query, chunk, user, status="graded", grade=value)
    return result, db.session.get_one(Judgment, result.judgment_id)
