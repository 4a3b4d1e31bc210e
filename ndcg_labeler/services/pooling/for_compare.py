"""Pooling for a decision: the unjudged pairs of two runs' top K, by how much they could move
B − A, and the labels until the comparison is robust (scoring.order_for_compare,
scoring.labels_to_robust; the definitions are there).

Adding them to the queue keeps their order: the queue hands out the query holding the open
pair of lowest priority first and, within a query, its pairs by priority, so the n pairs get
priorities −n … −1 in weight order. Being negative, they come before every pair pooled by
rank or imported (priorities ≥ 0). A listed pair already in the queue takes its new priority.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from ndcg_labeler import scoring
from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Pair, Query, Run, TestSet, utcnow
from ndcg_labeler.services import ServiceError, live, tallies
from ndcg_labeler.services._db import insert_if_absent, select_rows, transaction
from ndcg_labeler.services._figures_cache import Kept, cached, stored
from ndcg_labeler.services.pooling.plan import check_depth

MAX_SOURCE = 200
_BATCH = 500
_IN_BATCH = 900  # docids per IN list: below every database's parameter limit
# Plans a process keeps: the compare page (and its live fragment, polled while people label)
# shows one on every request, and ordering 7,000 queries' unjudged pairs takes seconds. A plan
# at k = 10 holds ~120,000 pairs (~20 MB), so only a few are kept.
_KEPT: Kept[CompareOrder] = Kept("ndcg_compare_plans", 4)
# What a page shows of a plan (its first pairs, their count, the verdict), stored in the
# figures cache so that a fresh worker shows it without ordering every pair again.
_PAGE_KIND = "compare_next"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompareOrder:
    """The ordered unjudged pairs of two runs' top `depth` and the flip test's figures."""

    test_set: TestSet
    run_a: Run
    run_b: Run
    depth: int
    pairs: list[scoring.NextLabel]
    query_ids: dict[str, int]
    robustness: scoring.Robustness | None
    """None when the options are not the ones the flip test is defined for (see `note`)."""
    k: int
    note: str = ""
    total: int | None = None
    """How many pairs the whole plan has, when `pairs` holds only its first ones (a stored
    page, see plan_page_for_compare); None: `pairs` is the whole plan."""

    @property
    def count(self) -> int:
        """How many unjudged pairs the plan lists in all."""
        return len(self.pairs) if self.total is None else self.total

    def not_in_corpus(self, limit: int | None = None) -> set[str]:
        """The docids among the first `limit` pairs (all: None) that no corpus gave a text: they
        cannot be labeled until it is imported. Asked afresh, as an import adds texts without
        changing the grades a plan is kept for."""
        docids = [p.docid for p in (self.pairs if limit is None else self.pairs[:limit])]
        return set(docids) - set(_chunk_ids(self.test_set.id, docids))

    def _pairs_not_in_corpus(self, missing: set[str] | None = None) -> int:
        missing = self.not_in_corpus() if missing is None else missing
        return sum(1 for p in self.pairs if p.docid in missing)

    def to_json(
        self, limit: int | None = None, missing: set[str] | None = None
    ) -> list[dict[str, Any]]:
        """[{"qid", "docid", "weight", "rank_a", "rank_b", "in_corpus"}, …] best first (the
        first `limit`); `in_corpus` false: no text to label it by yet. `missing`: not_in_corpus
        of those pairs when the caller has it (saves asking the corpus again)."""
        chosen = self.pairs if limit is None else self.pairs[:limit]
        missing = self.not_in_corpus(limit) if missing is None else missing
        return [
            {
                "qid": p.qid,
                "docid": p.docid,
                "weight": p.weight,
                "rank_a": p.rank_a,
                "rank_b": p.rank_b,
                "in_corpus": p.docid not in missing,
            }
            for p in chosen
        ]

    def with_pairs_json(self) -> dict[str, Any]:
        """summary_json with the whole list under "pairs" (the API's next-labels), the corpus
        asked once for both the summary's not_in_corpus and the pairs' in_corpus."""
        missing = self.not_in_corpus()
        return {**self.summary_json(missing), "pairs": self.to_json(missing=missing)}

    def summary_json(self, missing: set[str] | None = None) -> dict[str, Any]:
        """The flip test beside the list: robust, labels_remaining and the two means.
        `missing`: not_in_corpus() when the caller has it."""
        found = self.robustness
        return {
            "run_a": self.run_a.name,
            "run_b": self.run_b.name,
            "depth": self.depth,
            "k": self.k,
            "unjudged_pairs": self.count,
            # Only for the whole plan: a stored page holds its first pairs alone.
            "not_in_corpus": self._pairs_not_in_corpus(missing) if self.total is None else None,
            "robust": None if found is None else found.robust,
            "labels_remaining": None if found is None else found.labels_remaining,
            "mean_delta": None if found is None else found.mean_delta,
            "mean_delta_if_unjudged_top": None if found is None else found.mean_delta_if_top,
            "note": self.note,
        }


def source_label(run_a: Run, run_b: Run, depth: int) -> str:
    """The Pair source: "compare:<A>,<B>@depth" (shortened to fit the column)."""
    label = f"compare:{run_a.name},{run_b.name}@{depth}"
    if len(label) <= MAX_SOURCE:
        return label
    tail = f"…@{depth}"
    return label[: MAX_SOURCE - len(tail)] + tail


def _qids(test_set: TestSet) -> dict[int, str]:
    """{query id: qid} of the test set."""
    rows = select_rows(sa.select(Query.id, Query.qid).where(Query.test_set_id == test_set.id))
    return {int(i): str(q) for i, q in rows}


def _flip_note(options: live.Resolved) -> str:
    """Why the flip test is not computed under these options ("" when it is)."""
    if options.labels != "human":
        return "labels remaining is computed on people's grades only (labels=human)"
    if options.ideal != "judged" or options.judged_only:
        return "labels remaining is computed for the judged ideal on full lists only"
    return ""


def plan_for_compare(
    test_set: TestSet,
    run_a: Run,
    run_b: Run,
    depth: int | None,
    options: live.ScoreOptions | None = None,
) -> CompareOrder:
    """The unjudged pairs of A's or B's top `depth` by weight, and the labels until robust.

    Unjudged: no grade from people under the aggregation policy (machine grades never count).
    The flip test scores NDCG@k with `options` (k, gain, aggregation).
    """
    depth = check_depth(depth)
    if run_a.id == run_b.id:
        raise ServiceError("choose two different runs")
    if run_a.test_set_id != test_set.id or run_b.test_set_id != test_set.id:
        raise ServiceError("the runs must belong to the test set")
    key = _plan_key(test_set, run_a, run_b, depth, options)
    found = _KEPT.get(key)
    if found is None:
        found = _KEPT.keep(key, _plan(test_set, run_a, run_b, depth, options))
    return found


def kept_plan_for_compare(
    test_set: TestSet,
    run_a: Run,
    run_b: Run,
    depth: int | None,
    options: live.ScoreOptions | None = None,
) -> CompareOrder | None:
    """plan_for_compare's plan if this process has it for the current grades, else None
    (nothing is computed: a page shows it at once or asks for it in a fragment of its own)."""
    key = _plan_key(test_set, run_a, run_b, check_depth(depth), options)
    return _KEPT.get(key)


def plan_page_for_compare(
    test_set: TestSet,
    run_a: Run,
    run_b: Run,
    depth: int | None,
    options: live.ScoreOptions | None,
    shown: int,
    *,
    compute: bool,
) -> CompareOrder | None:
    """What a page shows of plan_for_compare's plan: the whole plan when this process keeps
    it, else its first `shown` pairs with their count and the verdict as stored for the
    current grades (`total` set), else computed (and stored) when `compute`, else None."""
    depth = check_depth(depth)
    found = kept_plan_for_compare(test_set, run_a, run_b, depth, options)
    if found is not None:
        return found
    key = _plan_key(test_set, run_a, run_b, depth, options)
    # One row per comparison (runs, depth, options), its version the labels version.
    where = hashlib.sha256(repr(key[2:]).encode()).hexdigest()
    version = str(key[1])
    page = stored(test_set.id, _PAGE_KIND, where, version)
    if page is None and compute:
        plan = plan_for_compare(test_set, run_a, run_b, depth, options)
        made = _page(plan, shown)
        try:
            cached(test_set, _PAGE_KIND, where, lambda _: version, lambda _: made, inline=True)
        except OperationalError:  # a busy database (SQLite's one writer): kept in memory only
            log.info("what to label next: the page was not stored (database busy)")
        return plan
    if page is None:
        return None
    robustness = page["robustness"]
    return CompareOrder(
        test_set=test_set,
        run_a=run_a,
        run_b=run_b,
        depth=depth,
        pairs=[scoring.NextLabel(*pair) for pair in page["pairs"]],
        query_ids={},
        robustness=scoring.Robustness(*robustness) if robustness is not None else None,
        k=page["k"],
        note=page["note"],
        total=page["total"],
    )


def _page(plan: CompareOrder, shown: int) -> dict[str, Any]:
    """The stored form of a plan's page (JSON: floats round-trip exactly)."""
    found = plan.robustness
    return {
        "pairs": [list(pair) for pair in plan.pairs[:shown]],
        "total": plan.count,
        "robustness": list(found) if found is not None else None,
        "k": plan.k,
        "note": plan.note,
    }


def _plan_key(
    test_set: TestSet,
    run_a: Run,
    run_b: Run,
    depth: int,
    options: live.ScoreOptions | None,
) -> tuple[object, ...]:
    """What a plan depends on: both runs' content, the depth, the options and the grades (the
    labels version moves with every grade; machine grades never count here)."""
    return (
        test_set.id,
        test_set.labels_version,
        test_set.aggregation,
        test_set.relevance_threshold,
        test_set.scale_max,
        tuple((run.id, run.sha256, run.num_entries, run.kept_depth) for run in (run_a, run_b)),
        depth,
        repr(options or live.ScoreOptions()),
    )


def _plan(
    test_set: TestSet,
    run_a: Run,
    run_b: Run,
    depth: int,
    options: live.ScoreOptions | None,
) -> CompareOrder:
    """plan_for_compare, computed."""
    resolved = (options or live.ScoreOptions()).resolve(
        test_set.aggregation, test_set.relevance_threshold
    )
    qids = _qids(test_set)
    grades_by_id = live.grades_by_query(test_set, resolved.policy)
    grades = {qids[q]: g for q, g in grades_by_id.items() if q in qids}
    cut = max(depth, resolved.k)
    full_a = {qids[q]: d for q, d in live.top_lists(run_a, cut).items() if q in qids}
    full_b = {qids[q]: d for q, d in live.top_lists(run_b, cut).items() if q in qids}
    top = float(test_set.scale_max)
    pairs = scoring.order_for_compare(full_a, full_b, grades, depth, top)
    note = _flip_note(resolved)
    robustness = None
    if not note:
        k, gain = resolved.k, resolved.gain
        keys = sorted(set(grades) | set(full_a) | set(full_b))
        # The verdict on flat arrays; the per-query objects only when labels must follow.
        start = scoring.flip_test_flat(
            scoring.flip_arrays(keys, full_a, full_b, grades, k), k, top, gain
        )
        flips = []
        if not start.robust:
            flips = [
                _flip_query(qid, full_a.get(qid, []), full_b.get(qid, []), grades.get(qid, {}), k)
                for qid in keys
            ]
        order = [(p.qid, p.docid) for p in pairs]
        robustness = scoring.labels_to_robust(flips, order, k, top, gain, start=start)
    return CompareOrder(
        test_set=test_set,
        run_a=run_a,
        run_b=run_b,
        depth=depth,
        pairs=pairs,
        query_ids={q: i for i, q in qids.items()},
        robustness=robustness,
        k=resolved.k,
        note=note,
    )


def _flip_query(
    qid: str, docids_a: list[str], docids_b: list[str], grades: dict[str, int], k: int
) -> scoring.FlipQuery:
    """One query's top-k lists with their grades (None: unjudged) and its judged grades."""
    top_a, top_b = docids_a[:k], docids_b[:k]
    return scoring.FlipQuery(
        qid,
        top_a,
        [None if (g := grades.get(d)) is None else float(g) for d in top_a],
        top_b,
        [None if (g := grades.get(d)) is None else float(g) for d in top_b],
        [float(g) for g in grades.values()],
    )


def _chunk_ids(test_set_id: int, docids: list[str]) -> dict[str, int]:
    """{docid: chunk id} of the chunks among `docids` that have text (gradable)."""
    found: dict[str, int] = {}
    unique = sorted(set(docids))
    for start in range(0, len(unique), _IN_BATCH):
        rows = db.session.execute(
            sa.select(Chunk.docid, Chunk.id).where(
                Chunk.test_set_id == test_set_id,
                Chunk.text.is_not(None),
                Chunk.docid.in_(unique[start : start + _IN_BATCH]),
            )
        )
        found.update((str(d), int(i)) for d, i in rows)
    return found


def _queued(test_set_id: int, wanted: list[tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """{pair id: (query id, chunk id)} of the wanted pairs already in the queue."""
    keys = set(wanted)
    queries = sorted({q for q, _ in wanted})
    found: dict[int, tuple[int, int]] = {}
    for start in range(0, len(queries), _IN_BATCH):
        rows = db.session.execute(
            sa.select(Pair.id, Pair.query_id, Pair.chunk_id).where(
                Pair.test_set_id == test_set_id,
                Pair.query_id.in_(queries[start : start + _IN_BATCH]),
            )
        )
        for pair_id, q, c in rows:
            if (int(q), int(c)) in keys:
                found[int(pair_id)] = (int(q), int(c))
    return found


def _set_priorities(priorities: dict[int, int]) -> None:
    """Give queued pairs (by id) their new priorities, in one executemany."""
    if not priorities:
        return
    table = Pair.__table__
    db.session.execute(
        sa.update(table)
        .where(table.c.id == sa.bindparam("b_id"))
        .values(priority=sa.bindparam("b_priority")),
        [{"b_id": i, "b_priority": p} for i, p in priorities.items()],
    )


@dataclass(frozen=True)
class Added:
    """What adding a for-compare pool did."""

    added: int
    requeued: int
    not_in_corpus: int
    plan: CompareOrder


def add_for_compare(
    test_set: TestSet,
    run_a: Run,
    run_b: Run,
    depth: int | None,
    options: live.ScoreOptions | None = None,
) -> Added:
    """Queue the plan's pairs in weight order (priorities −n … −1); one transaction."""
    plan = plan_for_compare(test_set, run_a, run_b, depth, options)
    chunks = _chunk_ids(test_set.id, [p.docid for p in plan.pairs])
    wanted = [(plan.query_ids[p.qid], chunks[p.docid]) for p in plan.pairs if p.docid in chunks]
    priorities = {key: n - len(wanted) for n, key in enumerate(wanted)}
    source, now = source_label(run_a, run_b, plan.depth), utcnow()
    with transaction():
        tallies.lock_pool_counts(test_set.id)  # counter lock first, as every counter writer
        queued = _queued(test_set.id, wanted)
        _set_priorities({pair_id: priorities[key] for pair_id, key in queued.items()})
        taken = set(queued.values())
        rows = [
            {
                "test_set_id": test_set.id,
                "query_id": q,
                "chunk_id": c,
                "source": source,
                "priority": priorities[(q, c)],
                "created_at": now,
            }
            for q, c in wanted
            if (q, c) not in taken
        ]
        new_ids: list[int] = []
        for start in range(0, len(rows), _BATCH):
            new_ids += insert_if_absent(
                Pair.__table__, rows[start : start + _BATCH], ["query_id", "chunk_id"]
            )
        if new_ids:  # new pairs may have judgments already (a machine's, a cant-tell): count them
            tallies.recount_pool(test_set.id, new_ids)
    return Added(len(new_ids), len(queued), len(plan.pairs) - len(wanted), plan)
