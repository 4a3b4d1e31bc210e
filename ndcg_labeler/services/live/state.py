"""What a live score reflects: a test set's versions, settings and queries, read per request.

A stored score is current while the test set's labels version has not moved (grades.py says
which queries moved since), and fits while no query was added (`queries_key`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query, TestSet

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class TestSetState:
    """The cheap per-request snapshot of what scoring depends on in a test set."""

    id: int
    name: str
    labels_version: int
    runs_version: int
    aggregation: str
    threshold: int
    query_max_id: int
    scale_max: int = 3  # the scale's top grade (the sensitivity figures give it to unjudged)

    @property
    def queries_key(self) -> int:
        """Changes when queries are added."""
        return self.query_max_id


def _test_set_state_statement() -> sa.Select[tuple[Any, ...]]:
    """The one-row read behind every live request, built once (no per-call SQL building)."""
    q = Query.__table__
    t = TestSet.__table__
    ts = sa.bindparam("test_set_id")
    # max(id) is one index seek (a count would scan): new queries always get larger ids, and
    # queries are never deleted on their own (only with their test set).
    top = sa.select(sa.func.max(q.c.id)).where(q.c.test_set_id == ts).scalar_subquery()
    return sa.select(
        t.c.name,
        t.c.labels_version,
        t.c.runs_version,
        t.c.aggregation,
        t.c.relevance_threshold,
        top,
        t.c.scale_max,
    ).where(t.c.id == ts)


_TEST_SET_STATE = _test_set_state_statement()


def test_set_state(test_set_id: int) -> TestSetState:
    """One round trip: versions, policy, threshold, scale and the newest query of a test set."""
    row = db.session.execute(_TEST_SET_STATE, {"test_set_id": test_set_id}).one()
    return TestSetState(test_set_id, row[0], row[1], row[2], row[3], row[4], row[5] or 0, row[6])


@dataclass
class QuerySet:
    """A test set's queries in a fixed order (by qid), with their ids."""

    key: int
    ids: np.ndarray
    qids: list[str]
    index: dict[int, int]


def load_query_set(state: TestSetState) -> QuerySet:
    """The test set's queries, ordered by qid (byte order, as trec_eval lists them)."""
    import numpy as np  # here: reading a test set's state (lists of runs) needs none

    rows = db.session.execute(
        sa.select(Query.id, Query.qid).where(Query.test_set_id == state.id)
    ).all()
    rows.sort(key=lambda r: r[1])
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    return QuerySet(
        state.queries_key, ids, [r[1] for r in rows], {int(q): i for i, q in enumerate(ids)}
    )


def query_set(state: TestSetState, cache: dict[int, QuerySet]) -> QuerySet:
    """The test set's queries from `cache`, read again only when queries were added."""
    current = cache.get(state.id)
    if current is None or current.key != state.queries_key:
        current = cache[state.id] = load_query_set(state)
    return current
