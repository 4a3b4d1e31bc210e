"""The labeling queue: which pair an annotator grades next, with leases that cap overlap.

Order: the current query's remaining pairs first (by pair priority); otherwise the first query
of a judge's audit sample (in draw order) holding an open pair; otherwise the query holding the
pair with the fewest judgments and, among those, the lowest priority (then the first in import
order); a query is started at its best-priority pair. Priority first across queries is what lets
a for-compare pool (pooling.add_for_compare) hand out its pairs in weight order.
Never a pair the annotator already answered; pairs they skipped come back only when nothing
else is left; never a pair that already has (or is promised) its target number of judgments.

Overlap is enforced with leases (Assignment rows): a pair is handed out to at most
`target - judgments` people at once, and a lease lapses after LEASE_MINUTES. Handing out is
serialised per pair: on PostgreSQL by locking the pair row (SELECT ... FOR UPDATE) and counting
again in a fresh statement; on SQLite the transaction starts with a write, which takes the
database's single write lock (BEGIN IMMEDIATE semantics) before anything is counted.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    Assignment,
    AuditSample,
    AuditSampleQuery,
    Judgment,
    Pair,
    TestSet,
    User,
    utcnow,
)
from ndcg_labeler.models.users import IMPORT_ROLE
from ndcg_labeler.services import tallies
from ndcg_labeler.services._db import transaction

LEASE_MINUTES = 30
# Statuses that count toward a pair's target; a skip is "not now", not an answer.
COUNTED = ("graded", "cant_tell")
# Give up after this many pairs were taken by others between choosing and locking them.
MAX_TRIES = 50


def import_source_ids() -> sa.Select[tuple[int]]:
    """Ids of import pseudo-users: imported qrels are prior evidence, not a human pass."""
    return sa.select(User.id).where(User.role == IMPORT_ROLE)


def _cutoff() -> datetime:
    """Leases handed out before this instant have lapsed."""
    return utcnow() - timedelta(minutes=LEASE_MINUTES)


def _expire_leases(cutoff: datetime) -> None:
    """Delete the leases handed out before `cutoff` (they have lapsed)."""
    db.session.execute(
        sa.delete(Assignment).where(Assignment.assigned_at < cutoff),
        execution_options={"synchronize_session": False},
    )


def _leased_to_others(user_id: int, cutoff: datetime) -> sa.ScalarSelect[int]:
    """Correlated count of live leases on the pair held by people other than `user_id`."""
    return (
        sa.select(sa.func.count())
        .select_from(Assignment)
        .where(
            Assignment.pair_id == Pair.id,
            Assignment.user_id != user_id,
            Assignment.assigned_at >= cutoff,
        )
        .scalar_subquery()
    )


def _candidate(
    test_set: TestSet,
    user: User,
    cutoff: datetime,
    *,
    skipped: bool,
    query_id: int | None,
    exclude: set[int],
) -> Pair | None:
    """The best open pair: within `query_id` by priority, else the lowest-priority pair with
    the fewest answers.

    The pair's answers are a stored counter (pair.answers, indexed with the test set and the
    query), so the search walks the ix_pair_queue index level by level and stops at the first
    open pair; only "answered by me" and others' leases are correlated lookups on unique keys.
    """
    target = test_set.judgments_per_pair
    answered = sa.exists().where(
        Judgment.query_id == Pair.query_id,
        Judgment.chunk_id == Pair.chunk_id,
        Judgment.annotator_id == user.id,
    )
    if skipped:
        answered = answered.where(Judgment.status == "skipped")
    n = Pair.answers
    base = (
        sa.select(Pair)
        .where(Pair.test_set_id == test_set.id, answered if skipped else ~answered)
        .where(n + _leased_to_others(user.id, cutoff) < target)
    )
    if exclude:
        base = base.where(Pair.id.not_in(exclude))
    if query_id is not None:
        stmt = base.where(Pair.query_id == query_id).order_by(Pair.priority, Pair.id)
        return db.session.scalar(stmt.limit(1))
    sampled = _in_audit_sample(base, test_set.id)
    if sampled is not None:
        return sampled
    # Fewest answers first: try pairs with 0 answers, then 1, ... (few levels: target <= 5);
    # within a level the lowest priority (ix_pair_queue walks them in this order).
    for level in range(target):
        stmt = base.where(n == level).order_by(Pair.priority, Pair.query_id, Pair.id)
        pair = db.session.scalar(stmt.limit(1))
        if pair is not None:
            return pair
    return None


def _in_audit_sample(base: sa.Select[tuple[Pair]], test_set_id: int) -> Pair | None:
    """The best open pair of the first query in the judges' audit samples that has one.

    Audit samples come first so that their queries get a human grade early (a prediction-
    powered estimate rests on them). With several judges' samples, a query's place is its
    earliest place in any of them. The walk starts from the samples (small) and probes each
    query's pairs by index: a join would let the planner walk the whole pool instead.
    """
    has_open = base.with_only_columns(Pair.id).where(Pair.query_id == AuditSampleQuery.query_id)
    first = db.session.scalar(
        sa.select(AuditSampleQuery.query_id)
        .join(AuditSample, AuditSample.id == AuditSampleQuery.sample_id)
        .where(AuditSample.test_set_id == test_set_id, has_open.exists())
        .order_by(AuditSampleQuery.position, AuditSample.id)
        .limit(1)
    )
    if first is None:
        return None
    stmt = base.where(Pair.query_id == first).order_by(Pair.priority, Pair.id)
    return db.session.scalar(stmt.limit(1))


def _claim(pair: Pair, user: User, target: int, cutoff: datetime) -> bool:
    """Lease the pair to the user unless judgments plus others' live leases reached the target."""
    # Blocks concurrent claimers of this pair on PostgreSQL (no-op on SQLite, already locked).
    db.session.execute(sa.select(Pair.id).where(Pair.id == pair.id).with_for_update())
    # A fresh statement after the lock: under READ COMMITTED it sees every committed lease
    # and the pair's answers counter as the last committed grade left it.
    judged = db.session.scalar(
        sa.select(Pair.answers).where(Pair.id == pair.id).execution_options(populate_existing=True)
    )
    leased = db.session.scalar(
        sa.select(sa.func.count())
        .select_from(Assignment)
        .where(
            Assignment.pair_id == pair.id,
            Assignment.user_id != user.id,
            Assignment.assigned_at >= cutoff,
        )
    )
    if (judged or 0) + (leased or 0) >= target:
        return False
    _drop_leases(user.id, pair.test_set_id)
    db.session.add(Assignment(pair_id=pair.id, user_id=user.id, assigned_at=utcnow()))
    db.session.flush()
    return True


def _drop_leases(user_id: int, test_set_id: int) -> None:
    """One open lease per person and test set: taking a new pair frees the previous one."""
    # Two small steps (the user's leases, then their pairs' test set) keep the planner from
    # walking the whole pool.
    held = dict(
        db.session.execute(
            sa.select(Assignment.id, Assignment.pair_id).where(Assignment.user_id == user_id)
        ).all()
    )
    if not held:
        return
    here = set(
        db.session.scalars(
            sa.select(Pair.id).where(Pair.id.in_(held.values()), Pair.test_set_id == test_set_id)
        )
    )
    doomed = [lease_id for lease_id, pair_id in held.items() if pair_id in here]
    if doomed:
        db.session.execute(
            sa.delete(Assignment).where(Assignment.id.in_(doomed)),
            execution_options={"synchronize_session": False},
        )


def _held_lease(test_set: TestSet, user: User, cutoff: datetime) -> Pair | None:
    """The pair this user was handed and has not answered yet (reloads return the same pair)."""
    # Leases are few: read the user's first, so the planner never walks the whole pool.
    leased = list(
        db.session.scalars(
            sa.select(Assignment.pair_id).where(
                Assignment.user_id == user.id, Assignment.assigned_at >= cutoff
            )
        )
    )
    if not leased:
        return None
    answered = sa.exists().where(
        Judgment.query_id == Pair.query_id,
        Judgment.chunk_id == Pair.chunk_id,
        Judgment.annotator_id == user.id,
    )
    return db.session.scalar(
        sa.select(Pair)
        .where(Pair.id.in_(leased), Pair.test_set_id == test_set.id, ~answered)
        .order_by(Pair.id)
        .limit(1)
    )


def _current_query_id(test_set: TestSet, user: User) -> int | None:
    """The query of the user's latest answer here: finish a query before starting another."""
    return db.session.scalar(
        sa.select(Judgment.query_id)
        .where(Judgment.annotator_id == user.id, Judgment.test_set_id == test_set.id)
        .order_by(Judgment.updated_at.desc(), Judgment.id.desc())
        .limit(1)
    )


def _has_skips(test_set: TestSet, user: User) -> bool:
    """Whether the user skipped any pool pair of this test set (a stored counter)."""
    return tallies.annotator_counts(test_set.id, user.id).skipped > 0


def _pick(
    test_set: TestSet,
    user: User,
    cutoff: datetime,
    skipped: bool,
    current: int | None,
    exclude: set[int],
) -> Pair | None:
    """The next open pair: the current query's best, else the best query's highest-priority."""
    if current is not None:
        pair = _candidate(
            test_set, user, cutoff, skipped=skipped, query_id=current, exclude=exclude
        )
        if pair is not None:
            return pair
    best = _candidate(test_set, user, cutoff, skipped=skipped, query_id=None, exclude=exclude)
    if best is None:
        return None
    # Start that query at its highest-priority open pair.
    pair = _candidate(
        test_set, user, cutoff, skipped=skipped, query_id=best.query_id, exclude=exclude
    )
    return pair or best


def next_pair(test_set: TestSet, user: User) -> Pair | None:
    """Lease and return the next pair for `user`, or None when nothing is left for them; commits."""
    target = test_set.judgments_per_pair
    with transaction():  # commits the lease, or rolls back on any error
        cutoff = _cutoff()
        # First statement is a write: on SQLite this takes the write lock for the whole
        # transaction, so the counting below cannot interleave with another claimer.
        _expire_leases(cutoff)
        held = _held_lease(test_set, user, cutoff)
        if held is not None:
            return held
        current = _current_query_id(test_set, user)
        exclude: set[int] = set()
        # The second pass (pairs I skipped) walks the pool again: only when I skipped any.
        passes = (False, True) if _has_skips(test_set, user) else (False,)
        for skipped in passes:
            for _ in range(MAX_TRIES):
                pair = _pick(test_set, user, cutoff, skipped, current, exclude)
                if pair is None:
                    break
                if _claim(pair, user, target, cutoff):
                    return pair
                exclude.add(pair.id)
        return None


def upcoming(
    test_set: TestSet, user: User, *, query_id: int | None, exclude: set[int], n: int
) -> list[Pair]:
    """The next `n` pairs the queue would hand `user`, in order, WITHOUT leasing any of them.

    For the browser's prefetch: `exclude` holds the pairs the page already shows, holds or is
    still saving, and `query_id` the query of the last of them (finish a query first). A pair
    is leased only when it is shown (`claim`), so prefetching never keeps it from others.
    """
    cutoff = _cutoff()
    exclude = set(exclude)
    found: list[Pair] = []
    passes = (False, True) if _has_skips(test_set, user) else (False,)
    current = query_id if query_id is not None else _current_query_id(test_set, user)
    for skipped in passes:
        while len(found) < n:
            pair = _pick(test_set, user, cutoff, skipped, current, exclude)
            if pair is None:
                break
            found.append(pair)
            exclude.add(pair.id)
            current = pair.query_id
    return found


def claim(pair: Pair, user: User) -> bool:
    """Lease a pair the page is about to show (freeing the user's previous lease in its test
    set); False when others' judgments and live leases already reach its target. A pair the
    user answered before needs no lease. Commits."""
    test_set = db.session.get_one(TestSet, pair.test_set_id)
    with transaction():
        cutoff = _cutoff()
        # A write first: on SQLite it takes the write lock before anything is counted.
        _expire_leases(cutoff)
        mine = db.session.scalar(
            sa.select(Judgment.status).where(
                Judgment.query_id == pair.query_id,
                Judgment.chunk_id == pair.chunk_id,
                Judgment.annotator_id == user.id,
            )
        )
        if mine in COUNTED:
            return True
        return _claim(pair, user, test_set.judgments_per_pair, cutoff)


def release(pair: Pair, user: User) -> None:
    """Give back the user's lease on this pair (the page was left without answering it)."""
    with transaction():
        db.session.execute(
            sa.delete(Assignment).where(
                Assignment.pair_id == pair.id, Assignment.user_id == user.id
            ),
            execution_options={"synchronize_session": False},
        )
