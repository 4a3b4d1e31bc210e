"""Pooling: put the unjudged chunks of runs' top `depth` into the labeling queue.

Depth-k pooling as TREC does it: for every query, the union of the top `depth` chunks of the
chosen runs, minus those that already have a grade (under the test set's aggregation policy)
and those already in the queue, becomes new Pair rows. A pair's priority is its best rank in
any chosen run, so the queue offers rank 1 before rank 2. Chunks the corpus does not have (no
text) are left out: nobody can grade what they cannot read. Adding is idempotent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Pair, Run, TestSet
from ndcg_labeler.models._common import utcnow
from ndcg_labeler.services import ServiceError, live, testsets
from ndcg_labeler.services._db import insert_if_absent, raw_rows, transaction
from ndcg_labeler.services._progress import Progress, no_progress

MAX_DEPTH = 1000
MAX_SOURCE = 200
_BATCH = 500
_IN_BATCH = 900  # parameters per IN list: below SQLite's old limit of 999


@dataclass(frozen=True)
class Coverage:
    """A run's mean judged@depth now and once every queued pair (old and new) is graded."""

    run: Run
    now: float | None
    after: float | None
    chosen: bool


@dataclass(frozen=True)
class PoolPlan:
    """What pooling would add, and the coverage each run of the test set would reach."""

    test_set: TestSet
    runs: list[Run]
    depth: int
    source: str
    new_pairs: list[tuple[int, int, int]]  # (query id, chunk id, priority)
    already_queued: int
    not_in_corpus: int
    coverage: list[Coverage]

    @property
    def to_add(self) -> int:
        """Pairs the plan would add."""
        return len(self.new_pairs)


def source_label(runs: Sequence[Run], depth: int) -> str:
    """The Pair source: "pool:<run names>@depth" (shortened to fit the column)."""
    label = f"pool:{','.join(run.name for run in runs)}@{depth}"
    if len(label) <= MAX_SOURCE:
        return label
    tail = f"…@{depth}"
    return label[: MAX_SOURCE - len(tail)] + tail


def check_depth(depth: int | None) -> int:
    """A pooling depth from 1 to MAX_DEPTH."""
    if depth is None or isinstance(depth, bool) or not 1 <= depth <= MAX_DEPTH:
        raise ServiceError(f"depth must be a whole number from 1 to {MAX_DEPTH}")
    return depth


def _top_lists(
    runs: Sequence[Run], depth: int
) -> tuple[dict[int, dict[str, int]], list[dict[int, list[str]]]]:
    """The grades {query id: {docid: grade}} and, per run, {query id: top-depth docids}."""
    if not runs:
        return {}, []
    grades = live.grades_by_query(runs[0].test_set)
    return grades, [live.top_lists(run, depth) for run in runs]


def _chunk_ids(test_set_id: int, docids: set[str]) -> dict[str, int]:
    """docid -> chunk id for chunks that have text (in batches: SQLite limits parameters)."""
    out: dict[str, int] = {}
    ordered = sorted(docids)
    for start in range(0, len(ordered), _IN_BATCH):
        batch = ordered[start : start + _IN_BATCH]
        marks = ",".join("?" * len(batch))
        rows = raw_rows(
            "SELECT docid, id FROM chunk WHERE test_set_id = ? AND text IS NOT NULL"
            f" AND docid IN ({marks})",
            [test_set_id, *batch],
        )
        out.update((str(d), int(i)) for d, i in rows)
    return out


def _queued(test_set_id: int) -> set[tuple[int, int]]:
    """(query id, chunk id) of every pair already in the test set's queue."""
    rows = raw_rows("SELECT query_id, chunk_id FROM pair WHERE test_set_id = ?", [test_set_id])
    return {(int(q), int(c)) for q, c in rows}


def _mean_share(
    tops: dict[int, list[str]], counted: Callable[[int, str], bool], depth: int
) -> float | None:
    """Mean over the run's queries of the share of the top `depth` that `counted` accepts."""
    if not tops:
        return None
    shares = [sum(1 for d in docids if counted(q, d)) / depth for q, docids in tops.items()]
    return float(np.mean(shares))


def plan_pool(
    test_set: TestSet, runs: Sequence[Run], depth: int | None, judge: str | None = None
) -> PoolPlan:
    """What pooling the top `depth` of `runs` would add (nothing is written).

    With `judge`, the new pairs are queued by how much that machine judge's grade says they
    would move NDCG (gain over log2(best rank + 1)), largest first; pairs it did not grade
    keep the rank order after them.
    """
    depth = check_depth(depth)
    if not runs:
        raise ServiceError("choose at least one run to pool from")
    if any(run.test_set_id != test_set.id for run in runs):
        raise ServiceError("the runs must belong to the test set")
    everyone = _all_runs(test_set)
    chosen_ids = {run.id for run in runs}
    grades, tops = _top_lists(everyone, depth)
    by_run = dict(zip([r.id for r in everyone], tops, strict=True))
    # The best rank of every unjudged (query, chunk) in any run's top, and in the chosen runs'.
    best_any: dict[tuple[int, str], int] = {}
    best: dict[tuple[int, str], int] = {}
    for run in everyone:
        target = best if run.id in chosen_ids else None
        for qpk, docids in by_run[run.id].items():
            judged = grades.get(qpk, {})
            for rank, docid in enumerate(docids, start=1):
                if docid in judged:
                    continue
                key = (qpk, docid)
                if rank < best_any.get(key, depth + 1):
                    best_any[key] = rank
                if target is not None and rank < target.get(key, depth + 1):
                    target[key] = rank
    chunk_ids = _chunk_ids(test_set.id, {docid for _, docid in best_any})
    ids = {chunk_id: docid for docid, chunk_id in chunk_ids.items()}
    queued = _queued(test_set.id)
    # Unjudged chunks that will carry a grade once the queue is done: queued now, or new.
    pending = {key for key in best_any if (key[0], chunk_ids.get(key[1], -1)) in queued}
    new_pairs: list[tuple[int, int, int]] = []
    already = missing = 0
    for (qpk, docid), rank in sorted(best.items(), key=lambda item: (item[1], item[0])):
        chunk_id = chunk_ids.get(docid)
        if chunk_id is None:
            missing += 1
        elif (qpk, docid) in pending:
            already += 1
        else:
            new_pairs.append((qpk, chunk_id, rank))
            pending.add((qpk, docid))

    def judged_now(q: int, d: str) -> bool:
        return d in grades.get(q, ())

    def judged_after(q: int, d: str) -> bool:
        return d in grades.get(q, ()) or (q, d) in pending

    coverage = [
        Coverage(
            run=run,
            now=_mean_share(by_run[run.id], judged_now, depth),
            after=_mean_share(by_run[run.id], judged_after, depth),
            chosen=run.id in chosen_ids,
        )
        for run in everyone
    ]
    if judge:
        machine = live.grades_by_query(test_set, labels=f"machine:{judge}")
        new_pairs = by_machine_impact(new_pairs, machine, ids)
    return PoolPlan(
        test_set=test_set,
        runs=list(runs),
        depth=depth,
        source=source_label(runs, depth),
        new_pairs=new_pairs,
        already_queued=already,
        not_in_corpus=missing,
        coverage=coverage,
    )


def _all_runs(test_set: TestSet) -> list[Run]:
    stmt = sa.select(Run).where(Run.test_set_id == test_set.id).order_by(Run.uploaded_at, Run.id)
    return list(db.session.scalars(stmt))


def by_machine_impact(
    pairs: list[tuple[int, int, int]], machine: dict[int, dict[str, int]], docids: dict[int, str]
) -> list[tuple[int, int, int]]:
    """(query, chunk, priority) re-ranked: the largest machine-estimated DCG gain first."""

    def impact(pair: tuple[int, int, int]) -> float:
        grade = machine.get(pair[0], {}).get(docids[pair[1]])
        return -1.0 if grade is None else max(grade, 0) / float(np.log2(pair[2] + 1))

    ordered = sorted(pairs, key=lambda pair: (-impact(pair), pair[2], pair[0], pair[1]))
    return [(q, c, priority) for priority, (q, c, _) in enumerate(ordered, start=1)]


def add_pool(
    test_set: TestSet,
    runs: Sequence[Run],
    depth: int | None,
    judge: str | None = None,
    progress: Progress = no_progress,
) -> tuple[int, PoolPlan]:
    """Add the plan's pairs to the queue (one transaction, idempotent); returns (added, plan).

    `progress` hears ("pool", done, total, done) of the pairs written; when it raises
    (Cancelled), nothing is added.
    """
    progress("plan", 0, 0, 0)
    plan = plan_pool(test_set, runs, depth, judge)
    now = utcnow()
    new_ids: list[int] = []
    total = len(plan.new_pairs)
    with transaction():
        testsets.lock_pool_counts(test_set.id)  # counter lock first, as every counter writer
        for start in range(0, total, _BATCH):
            progress("pool", start, total, start)
            rows = [
                {
                    "test_set_id": test_set.id,
                    "query_id": qpk,
                    "chunk_id": chunk_id,
                    "source": plan.source,
                    "priority": rank,
                    "created_at": now,
                }
                for qpk, chunk_id, rank in plan.new_pairs[start : start + _BATCH]
            ]
            # A pair queued meanwhile (another admin, an import) stays as it is.
            new_ids += insert_if_absent(Pair.__table__, rows, ["query_id", "chunk_id"])
        added = len(new_ids)
        # New pairs may already have judgments (graded before they were pooled): count them.
        if new_ids:
            progress("pool", total, total, total)
            testsets.recount_pool(test_set.id, new_ids)
    return added, plan
