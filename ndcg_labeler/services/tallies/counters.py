"""Stored counters of the labeling pool, kept in the same transaction as every judgment change.

Definitions (the migration 0003_counters fills them the same way from existing data):

- `pair.answers`: people's answers that count toward the pair's target (status graded or
  can't tell; import sources excluded); `pair.grades`: graded judgments of anyone.
- `pool_tally` (one row per test set): `level_k` = pool pairs with k answers (level_5: five or
  more); `graded_pairs` = pool pairs with at least one grade; `graded_judgments` = graded
  judgments of the test set (pool or not); `graded_outside` = (query, chunk) pairs outside
  the pool with at least one grade.
- `annotator_tally` (per test set and person): `mine_k` = pool pairs the person answered
  (graded or can't tell) that have k answers now; `skipped` = pool pairs they skipped.

Every writer changes them with SQL increments (`SET n = n + 1`), never a value computed in
Python. Writers serialise per test set on the `pool_tally` row, taken before any other
counter: on PostgreSQL with SELECT ... FOR UPDATE, on SQLite by the database's one write lock
(every writer has written before it gets here). One order for everyone means no deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AnnotatorTally, Judgment, Pair, PoolTally, User
from ndcg_labeler.models.testsets import LEVELS
from ndcg_labeler.models.users import IMPORT_ROLE

# Statuses that count toward a pair's target (the queue's COUNTED; a skip is "not now").
COUNTED_STATUSES = ("graded", "cant_tell")
TOP = LEVELS - 1
# Pair ids per UPDATE ... IN (...) (SQLite caps the number of bound parameters).
BATCH = 5000

_pool = PoolTally.__table__
_mine = AnnotatorTally.__table__
_pair = Pair.__table__
_judgment = Judgment.__table__


@dataclass(frozen=True)
class PoolCounts:
    """A test set's stored counts: pool pairs per number of answers (last: that many or more)."""

    levels: tuple[int, ...]
    graded_pairs: int
    graded_judgments: int
    graded_outside: int = 0
    """(query, chunk) pairs outside the pool with at least one grade."""

    @property
    def pairs(self) -> int:
        """Pool pairs."""
        return sum(self.levels)

    def done(self, target: int) -> int:
        """Pool pairs with at least `target` answers (1 ≤ target ≤ 5)."""
        return sum(self.levels[min(target, TOP) :])


@dataclass(frozen=True)
class AnnotatorCounts:
    """One person's stored counts: pool pairs they answered by the pair's answers (1..5+)."""

    mine: tuple[int, ...]
    skipped: int

    @property
    def answered(self) -> int:
        """Pool pairs this person graded or found can't-tell."""
        return sum(self.mine)

    def full(self, target: int) -> int:
        """Of those, the pairs with at least `target` answers."""
        return sum(self.mine[min(target, TOP) - 1 :])


def _level(answers: int) -> int:
    return min(max(answers, 0), TOP)


def _insert_absent(table: sa.Table, row: dict[str, Any]) -> None:
    """INSERT the row unless its primary key exists (race-safe, no prior SELECT)."""
    dialect = db.session.get_bind().dialect.name
    # The dialects' insert (ON CONFLICT), imported here: the PostgreSQL dialect module costs
    # ~20 ms of start-up that SQLite never needs.
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    db.session.execute(insert(table).values(row).on_conflict_do_nothing())


def lock_pool_counts(test_set_id: int) -> None:
    """Take the test set's counter lock for the rest of the transaction (first, always)."""
    _insert_absent(_pool, {"test_set_id": test_set_id})
    db.session.execute(
        sa.select(_pool.c.test_set_id).where(_pool.c.test_set_id == test_set_id).with_for_update()
    )


def _is_human(annotator_id: int) -> bool:
    role = db.session.scalar(sa.select(User.role).where(User.id == annotator_id))
    return role is not None and role != IMPORT_ROLE


def _human_answerers(query_id: int, chunk_id: int) -> sa.Select[tuple[int]]:
    """Ids of the people whose answers to the pair count toward its target."""
    return (
        sa.select(_judgment.c.annotator_id)
        .join(User.__table__, User.__table__.c.id == _judgment.c.annotator_id)
        .where(
            _judgment.c.query_id == query_id,
            _judgment.c.chunk_id == chunk_id,
            _judgment.c.status.in_(COUNTED_STATUSES),
            User.__table__.c.role != IMPORT_ROLE,
        )
    )


def count_judgment_change(
    test_set_id: int,
    query_id: int,
    chunk_id: int,
    annotator_id: int,
    old_status: str | None,
    new_status: str | None,
) -> None:
    """Apply one judgment's status change (None: absent) to every stored counter.

    Call in the transaction that changed the judgment, after the change. A grade change
    within `graded` changes no count.
    """
    if old_status == new_status:
        return
    change = _Change.of(_is_human(annotator_id), old_status, new_status)
    lock_pool_counts(test_set_id)
    if change.graded:
        db.session.execute(
            sa.update(_pool)
            .where(_pool.c.test_set_id == test_set_id)
            .values(graded_judgments=_pool.c.graded_judgments + change.graded)
        )
    levels = _count_pair(test_set_id, query_id, chunk_id, change)
    if levels is None and change.graded:
        _count_outside(test_set_id, query_id, chunk_id, change.graded)
    if levels is None or not change.human:  # not a pool pair, or nobody's own tally
        return
    old_level, new_level = levels
    if old_level != new_level and min(old_level, new_level) >= 1:
        _move_other_answerers(test_set_id, query_id, chunk_id, annotator_id, old_level, new_level)
    _count_mine(test_set_id, annotator_id, change, old_level, new_level)


@dataclass(frozen=True)
class _Change:
    """How one judgment's status change moves the counts (each -1, 0 or +1)."""

    human: bool
    graded: int
    counted_before: bool
    counted_after: bool
    skipped: int

    @classmethod
    def of(cls, human: bool, old_status: str | None, new_status: str | None) -> _Change:
        """The change from `old_status` to `new_status` by a person (or an import source)."""
        return cls(
            human=human,
            graded=int(new_status == "graded") - int(old_status == "graded"),
            counted_before=human and old_status in COUNTED_STATUSES,
            counted_after=human and new_status in COUNTED_STATUSES,
            skipped=int(human and new_status == "skipped") - int(human and old_status == "skipped"),
        )

    @property
    def answers(self) -> int:
        """The change in the pair's counted answers."""
        return int(self.counted_after) - int(self.counted_before)


def _count_pair(
    test_set_id: int, query_id: int, chunk_id: int, change: _Change
) -> tuple[int, int] | None:
    """Move the pair's counters and the pool's levels; the pair's (old, new) level.

    None when the pair is not in the pool: only the test set's graded judgments count it.
    """
    row = db.session.execute(
        sa.update(_pair)
        .where(_pair.c.query_id == query_id, _pair.c.chunk_id == chunk_id)
        .values(answers=_pair.c.answers + change.answers, grades=_pair.c.grades + change.graded)
        .returning(_pair.c.answers, _pair.c.grades)
    ).one_or_none()
    if row is None:
        return None
    new_answers, new_grades = row
    old_level, new_level = _level(new_answers - change.answers), _level(new_answers)
    pool: dict[str, Any] = {}
    if old_level != new_level:
        pool[f"level_{old_level}"] = _pool.c[f"level_{old_level}"] - 1
        pool[f"level_{new_level}"] = _pool.c[f"level_{new_level}"] + 1
    had_grade, has_grade = new_grades - change.graded > 0, new_grades > 0
    if had_grade != has_grade:
        pool["graded_pairs"] = _pool.c.graded_pairs + (1 if has_grade else -1)
    if pool:
        db.session.execute(
            sa.update(_pool).where(_pool.c.test_set_id == test_set_id).values(**pool)
        )
    return old_level, new_level


def _count_outside(test_set_id: int, query_id: int, chunk_id: int, graded: int) -> None:
    """Move `graded_outside` when a pair outside the pool gained its first grade or lost its
    last one (`graded`: +1 or -1, the change just made)."""
    now = db.session.scalar(
        sa.select(sa.func.count()).where(
            _judgment.c.query_id == query_id,
            _judgment.c.chunk_id == chunk_id,
            _judgment.c.status == "graded",
        )
    )
    if (graded > 0 and now == 1) or (graded < 0 and now == 0):
        db.session.execute(
            sa.update(_pool)
            .where(_pool.c.test_set_id == test_set_id)
            .values(graded_outside=_pool.c.graded_outside + graded)
        )


def _move_other_answerers(
    test_set_id: int,
    query_id: int,
    chunk_id: int,
    annotator_id: int,
    old_level: int,
    new_level: int,
) -> None:
    """Everyone else who answered the pair sees it move from one level to the other."""
    others = _human_answerers(query_id, chunk_id).where(_judgment.c.annotator_id != annotator_id)
    db.session.execute(
        sa.update(_mine)
        .where(_mine.c.test_set_id == test_set_id, _mine.c.user_id.in_(others))
        .values(
            {
                f"mine_{old_level}": _mine.c[f"mine_{old_level}"] - 1,
                f"mine_{new_level}": _mine.c[f"mine_{new_level}"] + 1,
            }
        )
    )


def _count_mine(
    test_set_id: int, annotator_id: int, change: _Change, old_level: int, new_level: int
) -> None:
    """Move the annotator's own tally: the pair's level for their answer, and their skips."""
    _insert_absent(_mine, {"test_set_id": test_set_id, "user_id": annotator_id})
    mine: dict[str, Any] = {}
    if change.counted_before:
        mine[f"mine_{old_level}"] = _mine.c[f"mine_{old_level}"] - 1
    if change.counted_after:
        column = f"mine_{new_level}"
        mine[column] = (mine[column] if column in mine else _mine.c[column]) + 1
    if change.skipped:
        mine["skipped"] = _mine.c.skipped + change.skipped
    if mine:
        db.session.execute(
            sa.update(_mine)
            .where(_mine.c.test_set_id == test_set_id, _mine.c.user_id == annotator_id)
            .values(**mine)
        )


def recount_pool(test_set_id: int, pair_ids: list[int] | None = None) -> None:
    """Recount the pairs' counters from the judgments (`pair_ids`, or every pool pair), then
    rebuild the test set's tallies from them: for bulk writers (imports, pooling).

    Takes the counter lock first; O(pool + judgments) for the tallies.
    """
    lock_pool_counts(test_set_id)
    j, u = _judgment.alias("j"), User.__table__.alias("u")
    same = sa.and_(j.c.query_id == _pair.c.query_id, j.c.chunk_id == _pair.c.chunk_id)
    answers = (
        sa.select(sa.func.count())
        .select_from(j.join(u, u.c.id == j.c.annotator_id))
        .where(same, j.c.status.in_(COUNTED_STATUSES), u.c.role != IMPORT_ROLE)
        .scalar_subquery()
    )
    grades = sa.select(sa.func.count()).where(same, j.c.status == "graded").scalar_subquery()
    here = _pair.c.test_set_id == test_set_id
    recount = sa.update(_pair).values(answers=answers, grades=grades)
    plain = {"synchronize_session": False}
    if pair_ids is None:
        db.session.execute(recount.where(here), execution_options=plain)
    for begin in range(0, len(pair_ids or ()), BATCH):
        batch = list((pair_ids or [])[begin : begin + BATCH])
        db.session.execute(recount.where(here, _pair.c.id.in_(batch)), execution_options=plain)
    _rebuild_tallies(test_set_id)


def _rebuild_tallies(test_set_id: int) -> None:
    """pool_tally and annotator_tally of one test set, from pair counters and judgments."""
    here = _pair.c.test_set_id == test_set_id

    def pairs_where(*conditions: Any) -> sa.ScalarSelect[int]:
        return sa.select(sa.func.count()).where(here, *conditions).scalar_subquery()

    values: dict[str, Any] = {
        f"level_{k}": pairs_where(_pair.c.answers == k if k < TOP else _pair.c.answers >= k)
        for k in range(LEVELS)
    }
    values["graded_pairs"] = pairs_where(_pair.c.grades > 0)
    values["graded_judgments"] = (
        sa.select(sa.func.count())
        .where(_judgment.c.test_set_id == test_set_id, _judgment.c.status == "graded")
        .scalar_subquery()
    )
    values["graded_outside"] = graded_outside_query(test_set_id).scalar_subquery()
    db.session.execute(sa.update(_pool).where(_pool.c.test_set_id == test_set_id).values(values))
    db.session.execute(sa.delete(_mine).where(_mine.c.test_set_id == test_set_id))
    users = User.__table__
    counted = _judgment.c.status.in_(COUNTED_STATUSES)
    level = sa.case((_pair.c.answers > TOP, TOP), else_=_pair.c.answers)

    def tally(condition: Any) -> Any:
        return sa.func.coalesce(sa.func.sum(sa.case((condition, 1), else_=0)), 0)

    rows = (
        sa.select(
            sa.literal(test_set_id),
            _judgment.c.annotator_id,
            *(tally(sa.and_(counted, level == k)) for k in range(1, LEVELS)),
            tally(_judgment.c.status == "skipped"),
        )
        .select_from(
            _judgment.join(
                _pair,
                sa.and_(
                    _pair.c.query_id == _judgment.c.query_id,
                    _pair.c.chunk_id == _judgment.c.chunk_id,
                ),
            ).join(users, users.c.id == _judgment.c.annotator_id)
        )
        .where(_judgment.c.test_set_id == test_set_id, here, users.c.role != IMPORT_ROLE)
        .group_by(_judgment.c.annotator_id)
    )
    columns = ["test_set_id", "user_id", *(f"mine_{k}" for k in range(1, LEVELS)), "skipped"]
    db.session.execute(sa.insert(_mine).from_select(columns, rows))


def graded_outside_query(test_set_id: int) -> sa.Select[tuple[int]]:
    """Count of the (query, chunk) pairs outside the pool with at least one grade."""
    earlier = _judgment.alias("earlier")
    in_pool = sa.exists().where(
        _pair.c.query_id == _judgment.c.query_id, _pair.c.chunk_id == _judgment.c.chunk_id
    )
    # Each pair once, by its graded judgment with the lowest id (no derived table, which an
    # UPDATE's subquery could not correlate on every database).
    graded_before = sa.exists().where(
        earlier.c.query_id == _judgment.c.query_id,
        earlier.c.chunk_id == _judgment.c.chunk_id,
        earlier.c.status == "graded",
        earlier.c.id < _judgment.c.id,
    )
    return sa.select(sa.func.count()).where(
        _judgment.c.test_set_id == test_set_id,
        _judgment.c.status == "graded",
        sa.not_(in_pool),
        sa.not_(graded_before),
    )


def pool_counts(test_set_id: int) -> PoolCounts:
    """The test set's stored pool counts (zeros before anything was counted)."""
    row = db.session.execute(sa.select(_pool).where(_pool.c.test_set_id == test_set_id)).first()
    if row is None:
        return PoolCounts((0,) * LEVELS, 0, 0)
    return PoolCounts(
        tuple(int(row._mapping[f"level_{k}"]) for k in range(LEVELS)),
        int(row.graded_pairs),
        int(row.graded_judgments),
        int(row.graded_outside),
    )


def annotator_counts(test_set_id: int, user_id: int) -> AnnotatorCounts:
    """One person's stored counts in the test set (zeros when they answered nothing)."""
    row = db.session.execute(
        sa.select(_mine).where(_mine.c.test_set_id == test_set_id, _mine.c.user_id == user_id)
    ).first()
    if row is None:
        return AnnotatorCounts((0,) * (LEVELS - 1), 0)
    return AnnotatorCounts(
        tuple(int(row._mapping[f"mine_{k}"]) for k in range(1, LEVELS)), int(row.skipped)
    )
