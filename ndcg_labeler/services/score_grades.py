"""A test set's aggregated grades per policy, kept current from the JudgmentEvent log.

Read once per process and policy; then, whenever TestSet.labels_version moves, only the events
this process has not seen are read and only the queries they touch are re-aggregated (with the
grades module's own statements and rules). Each server process catches up the same way, since
the truth is in the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import JudgmentEvent, TestSet
from ndcg_labeler.services import grades as grade_service
from ndcg_labeler.services.score_cache import QuerySet, TestSetState, caches

# Event ids come from one counter shared by all test sets; on PostgreSQL a transaction may
# commit after one that took a later id. Re-reading a short tail of ids catches such stragglers.
EVENT_LOOKBACK = 128
# Past this many touched queries, re-reading every grade is cheaper than one query at a time.
FULL_RELOAD_QUERIES = 200
# Generations of change sets kept for dependents that fell behind (older ones recompute).
LOG_LENGTH = 256


@dataclass
class GradeState:
    """A test set's aggregated grades under one policy, kept current from the event log."""

    test_set_id: int
    policy: str
    labels_version: int
    queries_key: int
    grades: dict[int, dict[str, int]]
    judged: dict[int, np.ndarray] = field(default_factory=dict)
    max_event_id: int = 0
    seen: set[int] = field(default_factory=set)
    generation: int = 0
    # (generation, query ids changed by it); a None set means "everything changed".
    log: list[tuple[int, frozenset[int] | None]] = field(default_factory=list)

    def judged_grades(self, qpk: int) -> np.ndarray:
        """All judged grades of one query (for IDCG and num_rel)."""
        arr = self.judged.get(qpk)
        if arr is None:
            arr = np.fromiter(self.grades.get(qpk, {}).values(), dtype=np.float64)
            self.judged[qpk] = arr
        return arr

    def changed_since(self, generation: int) -> frozenset[int] | None:
        """Queries changed after `generation`; None when the caller must recompute all."""
        if generation == self.generation:
            return frozenset()
        if not self.log or self.log[0][0] > generation + 1:
            return None
        changed: set[int] = set()
        for gen, queries in self.log:
            if gen > generation:
                if queries is None:
                    return None
                changed |= queries
        return frozenset(changed)

    def _record(self, queries: frozenset[int] | None) -> None:
        self.generation += 1
        self.log.append((self.generation, queries))
        del self.log[:-LOG_LENGTH]


def _max_event_id(test_set_id: int) -> int:
    return int(
        db.session.scalar(
            sa.select(sa.func.max(JudgmentEvent.id)).where(JudgmentEvent.test_set_id == test_set_id)
        )
        or 0
    )


def _load_all(state: TestSetState, policy: str, query_set: QuerySet) -> GradeState:
    """Read every aggregated grade of the test set (events first: nothing is missed)."""
    max_id = _max_event_id(state.id)
    e = JudgmentEvent.__table__
    seen = set(
        db.session.scalars(
            sa.select(e.c.id).where(e.c.test_set_id == state.id, e.c.id > max_id - EVENT_LOOKBACK)
        )
    )
    test_set = db.session.get_one(TestSet, state.id)
    qrels = grade_service.scoring_qrels(test_set, policy)
    query_ids = dict(zip(query_set.qids, query_set.ids.tolist(), strict=True))
    grades = {query_ids[qid]: docs for qid, docs in qrels.items() if qid in query_ids}
    return GradeState(
        state.id,
        policy,
        state.labels_version,
        state.queries_key,
        grades,
        max_event_id=max_id,
        seen=seen,
    )


def grade_state(state: TestSetState, policy: str, query_set: QuerySet) -> GradeState:
    """The current grades of a test set under `policy`, syncing with the DB if labels moved."""
    key = (state.id, policy)
    store = caches().grades
    current = store.get(key)
    if current is None or current.queries_key != state.queries_key:
        fresh = _load_all(state, policy, query_set)
        if current is not None:
            fresh.generation = current.generation
            fresh.log = current.log
            fresh._record(None)
        store[key] = fresh
        return fresh
    if current.labels_version == state.labels_version:
        return current
    _catch_up(current, state, policy, query_set)
    return current


# The live hot path's statements, built once: building them per call costs more than running them.
_ONE_QUERY_GRADED = grade_service._graded_rows(
    sa.bindparam("test_set_id"), sa.bindparam("query_id")
)
_ONE_QUERY_ADJUDICATED = grade_service._adjudicated_rows(
    sa.bindparam("test_set_id"), sa.bindparam("query_id")
)
_EVENTS_SINCE = (
    sa.select(JudgmentEvent.__table__.c.id, JudgmentEvent.__table__.c.query_id)
    .where(
        JudgmentEvent.__table__.c.test_set_id == sa.bindparam("test_set_id"),
        JudgmentEvent.__table__.c.id > sa.bindparam("after"),
    )
    .order_by(JudgmentEvent.__table__.c.id)
)


def query_grades(test_set_id: int, query_id: int, policy: str) -> dict[str, int]:
    """grades.query_grades without its per-call SQL compilation (the live hot path).

    Same statements, same combination rules (the grades module's own); executed through the
    session, whose compiled-statement cache makes a one-query read cost about a millisecond
    instead of several. Few rows, so SQLAlchemy rows are cheap here.
    """
    params = {"test_set_id": test_set_id, "query_id": query_id}
    rows = db.session.execute(_ONE_QUERY_GRADED, params).all()
    adjudicated = db.session.execute(_ONE_QUERY_ADJUDICATED, params).all()
    qrels = grade_service._combine(rows, adjudicated, policy)
    return next(iter(qrels.values()), {})


def _catch_up(current: GradeState, state: TestSetState, policy: str, query_set: QuerySet) -> None:
    """Apply the events this process has not seen: re-aggregate only the touched queries."""
    rows = db.session.execute(
        _EVENTS_SINCE,
        {"test_set_id": state.id, "after": current.max_event_id - EVENT_LOOKBACK},
    ).all()
    touched = {qpk for event_id, qpk in rows if event_id not in current.seen}
    current.seen = {event_id for event_id, _ in rows}
    if rows:
        current.max_event_id = max(current.max_event_id, rows[-1][0])
    current.labels_version = state.labels_version
    if not touched:
        return
    if len(touched) > FULL_RELOAD_QUERIES:
        fresh = _load_all(state, policy, query_set)
        current.grades, current.judged, current.seen = fresh.grades, {}, fresh.seen
        current.max_event_id = max(current.max_event_id, fresh.max_event_id)
        current._record(None)
        return
    for qpk in touched:
        docs = query_grades(state.id, qpk, policy)
        if docs:
            current.grades[qpk] = docs
        else:
            current.grades.pop(qpk, None)
        current.judged.pop(qpk, None)
    current._record(frozenset(touched))
