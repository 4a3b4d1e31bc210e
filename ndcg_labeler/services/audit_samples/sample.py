"""A judge's audit sample: test-set queries drawn at random for people to grade in full.

The draw: the set's qids sorted in byte order (UTF-8), permuted by NumPy's seeded generator
(`numpy.random.default_rng(seed).permutation`), and the first N taken. The drawn queries are
stored in draw order, so a larger N later appends the next queries of the same permutation
(the same seed gives the same prefix) instead of drawing again. A query is *audited* once
every pool pair of it has a human grade: a person's graded judgment, an imported qrel or an
adjudication; machine grades never count, and a query without pool pairs is not audited.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    Adjudication,
    AuditSample,
    AuditSampleQuery,
    Judge,
    Judgment,
    Pair,
    Query,
    TestSet,
    User,
    utcnow,
)
from ndcg_labeler.services import ServiceError, audit, read_whole
from ndcg_labeler.services._db import insert_if_absent, transaction

# Seeds fit a signed 64-bit column on both databases; a random seed is drawn below 2**32 so
# that it stays short enough to read out and type again.
MAX_SEED = 2**63 - 1
RANDOM_SEEDS = 2**32
# Qids named in one audit-trail event (the full sample is on the calibration page).
EVENT_QIDS = 100


@dataclass(frozen=True)
class AuditState:
    """A judge's audit sample on a test set, with which sampled queries are audited now."""

    seed: int | None  # None: no sample drawn yet
    queries: list[str]  # sampled qids, in draw order
    audited: list[str]  # the sampled qids whose every pool pair has a human grade, in draw order
    no_pairs: list[str] = field(default_factory=list)  # sampled qids without pool pairs
    query_count: int = 0  # the test set's queries (what N may reach)

    def to_json(self) -> dict[str, Any]:
        """The `--json` / API form: queries, seed and audited, plus the counts beside them."""
        return {
            "queries": self.queries,
            "seed": self.seed,
            "audited": self.audited,
            "no_pool_pairs": self.no_pairs,
            "query_count": self.query_count,
        }


def draw_order(qids: Iterable[str], seed: int) -> list[str]:
    """Every qid in the seeded draw order: byte order, then permuted by the seeded generator."""
    ordered = sorted(qids, key=lambda qid: qid.encode("utf-8"))
    permutation = np.random.default_rng(seed).permutation(len(ordered))
    return [ordered[i] for i in permutation]


def _check_seed(seed: int | None) -> None:
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise ServiceError(f"the seed must be a whole number from 0 to {MAX_SEED}")


def _sample(test_set: TestSet, judge: Judge) -> AuditSample | None:
    return db.session.scalar(
        sa.select(AuditSample).where(
            AuditSample.test_set_id == test_set.id, AuditSample.judge_id == judge.id
        )
    )


def _sampled_ids(sample: AuditSample) -> list[int]:
    """The query ids of the sample, in draw order."""
    stmt = (
        sa.select(AuditSampleQuery.query_id)
        .where(AuditSampleQuery.sample_id == sample.id)
        .order_by(AuditSampleQuery.position)
    )
    return list(db.session.scalars(stmt))


def _query_ids(test_set: TestSet) -> dict[str, int]:
    """{qid: query id} of every query of the test set."""
    rows = db.session.execute(
        sa.select(Query.qid, Query.id).where(Query.test_set_id == test_set.id)
    )
    return {row.qid: row.id for row in rows}


def _extended(stored: list[int], ids: dict[str, int], seed: int, n: int) -> list[int]:
    """The stored sample followed by the next queries of the seed's draw order, N in all."""
    taken = set(stored)
    more = [ids[qid] for qid in draw_order(ids, seed) if ids[qid] not in taken]
    return stored + more[: n - len(stored)]


def _checked_n(typed: int | str, query_count: int, stored: int, replacing: bool) -> int:
    """N as a number (typed as text in the form and on the command line alike), or a
    ServiceError naming the range and what was typed."""
    if query_count == 0:
        raise ServiceError("the test set has no queries to sample")
    n = read_whole(typed, "N", 1, query_count, ", the test set's number of queries")
    if n < stored and not replacing:
        raise ServiceError(
            f"the sample has {stored} queries already and only grows; ask for at least "
            f"{stored}, or draw a new sample with --reseed"
        )
    return n


def draw_audit(
    test_set: TestSet,
    judge: Judge,
    n: int | str,
    *,
    seed: int | None = None,
    reseed: bool = False,
    actor: User | None = None,
) -> AuditState:
    """Draw the judge's audit sample of N queries, or extend it to N; commits with an audit event.

    The first draw uses `seed`, or a random seed stored with the sample. Later draws keep the
    stored seed: a different `seed` is refused unless `reseed`, which replaces the sample by a
    new draw (with `seed`, or a new random one). N above the set's query count is refused;
    N may be text as typed (read as the form and the CLI read it).
    """
    _check_seed(seed)
    with transaction():
        # Claim the sample's row before reading it: the insert is a write, so on SQLite it
        # takes the one writer's lock first (a concurrent first draw then waits, and reads
        # the sample that one stored, instead of inserting a second and failing); on
        # PostgreSQL it waits for a concurrent insert of the same row to commit.
        new = bool(
            insert_if_absent(
                AuditSample.__table__,
                [{"test_set_id": test_set.id, "judge_id": judge.id, "seed": 0}],
                ["test_set_id", "judge_id"],
            )
        )
        # One draw at a time per test set (PostgreSQL row lock; SQLite has one writer anyway).
        db.session.execute(sa.select(TestSet.id).where(TestSet.id == test_set.id).with_for_update())
        sample = _sample(test_set, judge)
        assert sample is not None
        db.session.refresh(sample)  # what the other draw stored, not an older read of it
        previous_seed = None if new else sample.seed
        if not new and seed is not None and seed != sample.seed and not reseed:
            raise ServiceError(
                f"this sample was drawn with seed {sample.seed}; to replace it by a new draw "
                f"with seed {seed}, ask again with --reseed (the form's 'draw a new sample')"
            )
        replacing = new or reseed
        stored = _sampled_ids(sample) if not replacing else []
        ids = _query_ids(test_set)
        n = _checked_n(n, len(ids), len(stored), replacing)
        if replacing:
            sample.seed = seed if seed is not None else secrets.randbelow(RANDOM_SEEDS)
        db.session.flush()
        if reseed:
            db.session.execute(
                sa.delete(AuditSampleQuery).where(AuditSampleQuery.sample_id == sample.id)
            )
        chosen = _extended(stored, ids, sample.seed, n)
        if chosen != stored or replacing:
            _store(sample, stored, chosen)
            _record(actor, test_set, judge, sample, stored, chosen, previous_seed, reseed)
    return audit_state(test_set, judge)


def _store(sample: AuditSample, stored: list[int], chosen: list[int]) -> None:
    """Append the newly drawn queries at their places in the draw."""
    rows = [
        {"sample_id": sample.id, "position": position, "query_id": query_id}
        for position, query_id in enumerate(chosen)
        if position >= len(stored)
    ]
    if rows:
        db.session.execute(sa.insert(AuditSampleQuery), rows)
    sample.updated_at = utcnow()


def _record(
    actor: User | None,
    test_set: TestSet,
    judge: Judge,
    sample: AuditSample,
    stored: list[int],
    chosen: list[int],
    previous_seed: int | None,
    reseed: bool,
) -> None:
    """The audit-trail event of a draw: what was drawn, with which seed, and what it replaced."""
    added = chosen[len(stored) :]
    shown = added[:EVENT_QIDS]
    rows = db.session.execute(sa.select(Query.id, Query.qid).where(Query.id.in_(shown)))
    names = {row.id: row.qid for row in rows}
    audit.record(
        actor,
        "audit_sample.draw",
        "test_set",
        test_set.id,
        test_set=test_set.name,
        judge=judge.name,
        seed=sample.seed,
        previous_seed=previous_seed,
        reseeded=reseed and previous_seed is not None,
        queries=len(chosen),
        previous_queries=len(stored),
        added_qids=[names[query_id] for query_id in shown],
    )


def audit_state(test_set: TestSet, judge: Judge) -> AuditState:
    """The judge's sample on the test set (seed, qids in draw order) and which are audited now."""
    query_count = db.session.scalar(
        sa.select(sa.func.count()).select_from(Query).where(Query.test_set_id == test_set.id)
    )
    sample = _sample(test_set, judge)
    if sample is None:
        return AuditState(seed=None, queries=[], audited=[], query_count=query_count or 0)
    asq = AuditSampleQuery
    rows = db.session.execute(
        sa.select(Query.id, Query.qid)
        .join(asq, asq.query_id == Query.id)
        .where(asq.sample_id == sample.id)
        .order_by(asq.position)
    ).all()
    counts = _pair_counts(sample)
    audited = [qid for query_id, qid in rows if _complete(counts.get(query_id))]
    no_pairs = [qid for query_id, qid in rows if query_id not in counts]
    return AuditState(
        seed=sample.seed,
        queries=[qid for _, qid in rows],
        audited=audited,
        no_pairs=no_pairs,
        query_count=query_count or 0,
    )


def _complete(count: tuple[int, int] | None) -> bool:
    """Every pool pair has a human grade (a query without pool pairs is not audited)."""
    return count is not None and count[0] > 0 and count[0] == count[1]


def _pair_counts(sample: AuditSample) -> dict[int, tuple[int, int]]:
    """{query id: (pool pairs, pool pairs with a human grade)} of the sampled queries."""
    graded = sa.exists().where(
        Judgment.query_id == Pair.query_id,
        Judgment.chunk_id == Pair.chunk_id,
        Judgment.status == "graded",
    )
    adjudicated = sa.exists().where(
        Adjudication.query_id == Pair.query_id, Adjudication.chunk_id == Pair.chunk_id
    )
    human = sa.case((sa.or_(graded, adjudicated), 1), else_=0)
    rows = db.session.execute(
        sa.select(Pair.query_id, sa.func.count(), sa.func.sum(human))
        .join(AuditSampleQuery, AuditSampleQuery.query_id == Pair.query_id)
        .where(AuditSampleQuery.sample_id == sample.id)
        .group_by(Pair.query_id)
    )
    return {query_id: (int(pairs), int(with_grade or 0)) for query_id, pairs, with_grade in rows}
