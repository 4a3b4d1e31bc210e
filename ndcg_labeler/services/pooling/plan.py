"""Pooling: put the unjudged chunks of runs' top `depth` into the labeling queue.

Depth-k pooling as TREC does it: for every query, the union of the top `depth` chunks of the
chosen runs, minus those that already have a grade (under the test set's aggregation policy)
and those already in the queue, becomes new Pair rows. A pair's priority is its best rank in
any chosen run, so the queue offers rank 1 before rank 2. Chunks the corpus does not have (no
text) are left out: nobody can grade what they cannot read. Adding is idempotent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Pair, Run, TestSet, utcnow
from ndcg_labeler.services import ServiceError, live, tallies, whole_number
from ndcg_labeler.services._db import driver_cursor, insert_if_absent, select_rows, transaction
from ndcg_labeler.services._progress import Progress, no_progress

if TYPE_CHECKING:
    from ndcg_labeler.services.pooling.arrays import Entries

MAX_DEPTH = 1000
MAX_SOURCE = 200
_BATCH = 500
# Parameters per IN list: below SQLite's limit (32,766 since 3.32; Python 3.11 bundles 3.40+)
# and PostgreSQL's 65,535.
_IN_BATCH = 30_000


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


def compare_cut(depth: str | None, k: str | None) -> tuple[int, int]:
    """(depth, k) of what to label next between two runs from what was asked (None or blank:
    not asked), one rule for the compare page, its JSON, the API and `flask pool`: the page's
    list is its top k. Neither: 10 and 10; k alone: depth k, at most MAX_DEPTH; depth alone:
    k = depth below 10 (a flip test deeper than the list weighs chunks it never listed), else
    10. A ServiceError names the argument, its range and the value."""
    default = live.ScoreOptions().k
    depth_text, k_text = (depth or "").strip(), (k or "").strip()
    # k as every score page reads it (its range and its sentence).
    k_value = live.parse_options({"k": k_text}).k if k_text else None
    if depth_text:
        found = whole_number(depth_text, "depth", 1, MAX_DEPTH)
    else:
        found = min(k_value if k_value is not None else default, MAX_DEPTH)
    if k_value is None:
        k_value = min(found, default)
    return found, k_value


def _top_lists(
    runs: Sequence[Run], depth: int
) -> tuple[dict[int, dict[str, int]], list[dict[int, list[str]]]]:
    """The grades {query id: {docid: grade}} and, per run, {query id: top-depth docids}."""
    if not runs:
        return {}, []
    grades = live.grades_by_query(runs[0].test_set)
    return grades, [live.top_lists(run, depth) for run in runs]


def _text_chunks(test_set_id: int, docids: list[str]) -> list[tuple[Any, ...]]:
    """(docid, id) of the chunks among `docids` that have text.

    Written for the DB-API cursor, not as a Core IN list: SQLAlchemy compiles one bind
    parameter per docid, ~0.07 s per 30,000 on SQLite, about 0.8 s more for the 343,000 new
    pairs of bench/pooling's preview (1.07 s).
    """
    marks = ",".join("?" * len(docids))
    sql = (
        "SELECT docid, id FROM chunk WHERE test_set_id = ? AND text IS NOT NULL"
        f" AND docid IN ({marks})"
    )
    with driver_cursor() as (cursor, mark):
        cursor.execute(sql.replace("?", mark), (test_set_id, *docids))
        return list(cursor.fetchall())


def _chunk_ids(test_set_id: int, docids: Any, codes: np.ndarray) -> np.ndarray:
    """code -> chunk id of the chunks of docids[codes] (a pyarrow string array) that have
    text; -1 for any other code (in batches: SQLite limits the parameters of one statement)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    wanted = docids.take(pa.array(codes, pa.int64())).to_pylist()
    names: list[str] = []
    ids: list[int] = []
    for start in range(0, len(wanted), _IN_BATCH):
        rows = _text_chunks(test_set_id, wanted[start : start + _IN_BATCH])
        names += [str(d) for d, _ in rows]
        ids += [int(i) for _, i in rows]
    out = np.full(len(docids), -1, np.int64)
    if names:
        found = pc.index_in(pa.array(names, pa.large_string()), docids)
        out[found.to_numpy(zero_copy_only=False).astype(np.int64)] = ids
    return out


def _queued(test_set_id: int, width: int) -> np.ndarray:
    """pair_keys of every pair already in the test set's queue whose chunk id is < width."""
    from ndcg_labeler.services.pooling.arrays import pair_keys

    pair = Pair.__table__
    rows = select_rows(
        sa.select(pair.c.query_id, pair.c.chunk_id).where(
            pair.c.test_set_id == test_set_id, pair.c.chunk_id < width
        )
    )
    found = np.array(rows, dtype=np.int64).reshape(-1, 2)
    return pair_keys(found[:, 0], found[:, 1], width)


def plan_pool(
    test_set: TestSet, runs: Sequence[Run], depth: int | None, judge: str | None = None
) -> PoolPlan:
    """What pooling the top `depth` of `runs` would add (nothing is written).

    With `judge`, the new pairs are queued by how much that machine judge's grade says they
    would move NDCG (gain over log2(best rank + 1)), largest first; pairs it did not grade
    keep the rank order after them.
    """
    # pyarrow (~50 ms to import) only when pooling: start-up stays light.
    from ndcg_labeler.services.pooling.arrays import Entries, member

    depth = check_depth(depth)
    if not runs:
        raise ServiceError("choose at least one run to pool from")
    if any(run.test_set_id != test_set.id for run in runs):
        raise ServiceError("the runs must belong to the test set")
    everyone = _all_runs(test_set)
    chosen_ids = {run.id for run in runs}
    grades, tops = _top_lists(everyone, depth)
    entries = Entries.build(tops, grades)
    chunk_of, pending = _chunks_and_queued(test_set.id, entries)
    chosen = np.isin(entries.run, [n for n, run in enumerate(everyone) if run.id in chosen_ids])
    new_pairs, new_keys, already, missing = _new_pairs(entries, chosen, chunk_of, pending)
    # Unjudged chunks that will carry a grade once the queue is done: queued now, or new.
    after = entries.judged | member(entries.key, np.concatenate([pending, new_keys]))
    coverage = [
        Coverage(
            run=run,
            now=entries.mean_share(n, entries.judged, depth),
            after=entries.mean_share(n, after, depth),
            chosen=run.id in chosen_ids,
        )
        for n, run in enumerate(everyone)
    ]
    if judge:
        new_pairs = _by_judge(test_set, judge, new_pairs, entries, chunk_of)
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


def _chunks_and_queued(test_set_id: int, entries: Entries) -> tuple[np.ndarray, np.ndarray]:
    """Docid code -> chunk id (-1: no text), and the keys of the unjudged entries whose pair
    is in the queue already."""
    from ndcg_labeler.services.pooling.arrays import member, pair_keys

    any_key, any_query, any_code, _ = entries.best(~entries.judged)
    used = np.zeros(len(entries.docids), dtype=bool)
    used[any_code] = True
    chunk_of = _chunk_ids(test_set_id, entries.docids, np.flatnonzero(used))
    width = max(int(chunk_of.max()) + 1 if chunk_of.size else 1, 1)
    queued = _queued(test_set_id, width)
    has_chunk = chunk_of[any_code] >= 0
    pending = any_key[has_chunk & member(pair_keys(any_query, chunk_of[any_code], width), queued)]
    return chunk_of, pending


def _new_pairs(
    entries: Entries, chosen: np.ndarray, chunk_of: np.ndarray, pending: np.ndarray
) -> tuple[list[tuple[int, int, int]], np.ndarray, int, int]:
    """The chosen runs' unjudged pairs that are not queued yet, by best rank, then query id,
    then docid (as strings): (pairs, their keys, how many are queued, how many lack text)."""
    from ndcg_labeler.services.pooling.arrays import member

    key, query, code, rank = entries.best(~entries.judged & chosen)
    sort = np.lexsort((entries.order[code], query, rank))
    key, query, code, rank = key[sort], query[sort], code[sort], rank[sort]
    chunk = chunk_of[code]
    is_pending = member(key, pending)
    missing = int(np.count_nonzero(chunk < 0))
    already = int(np.count_nonzero((chunk >= 0) & is_pending))
    new = (chunk >= 0) & ~is_pending
    new_pairs = list(zip(query[new].tolist(), chunk[new].tolist(), rank[new].tolist(), strict=True))
    return new_pairs, key[new], already, missing


def _by_judge(
    test_set: TestSet,
    judge: str,
    new_pairs: list[tuple[int, int, int]],
    entries: Entries,
    chunk_of: np.ndarray,
) -> list[tuple[int, int, int]]:
    """The new pairs in the order of the machine judge's estimated impact (by_machine_impact)."""
    import pyarrow as pa

    machine = live.grades_by_query(test_set, labels=f"machine:{judge}")
    known = np.flatnonzero(chunk_of >= 0)
    names = entries.docids.take(pa.array(known)).to_pylist()
    ids = dict(zip(chunk_of[known].tolist(), names, strict=True))
    return by_machine_impact(new_pairs, machine, ids)


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
        tallies.lock_pool_counts(test_set.id)  # counter lock first, as every counter writer
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
            tallies.recount_pool(test_set.id, new_ids)
    return added, plan
