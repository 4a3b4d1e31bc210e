"""What to label next for a decision between two runs, and how many labels until it is robust.

Order (item 4 of issue 29). Every unjudged (query, chunk) pair in run A's or run B's top K is
weighted by how much its grade could move the difference B − A:

    weight = top_grade × |1/log2(rank_A + 1) − 1/log2(rank_B + 1)|

where a run's term is 0 when it does not retrieve the chunk within its top K. Pairs are listed
by weight, largest first; ties by qid, then docid, both in byte order (UTF-8 byte order is code
point order, which is Python's string order: "B" < "a", "q10" < "q9").

Labels remaining. The flip test is scoring.flip_test (module flip: the compared queries, the
top-grade world, the winner and the tie); labels_to_robust starts from its verdict and then
updates the same world one label at a time (plain sums here, as flip_test on the labeled
queries would give: tests/scoring/test_flip.py checks that). Labels remaining is the smallest
m such that, with the first m pairs of the order labeled and each label confirming today's
value (grade 0, not relevant), the flip test passes; the rest stay at the top grade. It is an
estimate: a label that finds a relevant chunk moves today's values as well, so it is computed
again after every label. None when even the whole list does not make it pass (the list is
cut at a depth K below k, so unjudged chunks remain at the top grade). Given the grades the
labels will find (`revealed`: the decisions bench knows them), a label moves today's values and
the ideal as well, and the winner is that of today's values after the labels.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from .flip import FlipQuery, FlipTest, flip_test, winner
from .gains import gain_values
from .ndcg import log2_ranks
from .options import GainKind


class NextLabel(NamedTuple):
    """One unjudged pair, its weight and its 1-based ranks (None: not in that run's top K)."""

    qid: str
    docid: str
    weight: float
    rank_a: int | None
    rank_b: int | None


def _discount(rank: int | None) -> float:
    """1/log2(rank + 1), 0 when the run does not retrieve the chunk within the cut."""
    # math.log2 is the function trec_eval and log2_ranks use, so terms match bit for bit.
    return 0.0 if rank is None else 1.0 / math.log2(rank + 1)


def order_for_compare(
    tops_a: Mapping[str, Sequence[str]],
    tops_b: Mapping[str, Sequence[str]],
    judged: Mapping[str, Collection[str]],
    depth: int,
    top_grade: float,
) -> list[NextLabel]:
    """The unjudged pairs of A's or B's top `depth`, by top_grade × |1/log2(rA+1) − 1/log2(rB+1)|.

    tops_a/tops_b: {qid: ranked docids} (trec_eval order); judged: {qid: docids with a grade}.
    Best first; ties by qid, then docid (byte order). A docid listed twice keeps its best rank.
    """
    # Each rank's term once (the same math.log2 values _discount gives); index 0: not retrieved.
    terms = [0.0, *(_discount(rank) for rank in range(1, depth + 1))]
    found: list[tuple[float, str, str, int | None, int | None]] = []
    for qid in sorted(set(tops_a) | set(tops_b)):
        seen = judged.get(qid, ())
        ranks_a = _ranks(tops_a.get(qid, ()), depth)
        ranks_b = _ranks(tops_b.get(qid, ()), depth)
        for docid in ranks_a.keys() | ranks_b.keys():
            if docid in seen:
                continue
            rank_a, rank_b = ranks_a.get(docid), ranks_b.get(docid)
            weight = top_grade * abs(terms[rank_a or 0] - terms[rank_b or 0])
            found.append((-weight, qid, docid, rank_a, rank_b))
    # Plain tuples sort without a key function; (qid, docid) is unique, so the ranks are never
    # compared.
    found.sort()
    return [NextLabel(qid, docid, -weight, a, b) for weight, qid, docid, a, b in found]


def _ranks(docids: Sequence[str], depth: int) -> dict[str, int]:
    """{docid: its best 1-based rank} within the top `depth`."""
    ranks: dict[str, int] = {}
    for rank, docid in enumerate(docids[:depth], start=1):
        ranks.setdefault(docid, rank)
    return ranks


class Robustness(NamedTuple):
    """The flip test now and the labels (in the given order) until it passes."""

    robust: bool
    labels_remaining: int | None
    mean_delta: float | None
    """Mean of B − A under today's values (None: no compared query)."""
    mean_delta_if_top: float | None
    """Mean of B − A with every unjudged chunk of either top k at the top grade."""


class _Query:
    """One query's today and top-grade NDCG difference as its unjudged chunks are labeled.

    Plain Python over at most 2k values: the numpy calls cost more than the sums at k = 10,
    and the flip test builds one of these per query.
    """

    def __init__(self, query: FlipQuery, k: int, top_gain: float, gain: GainKind) -> None:
        self.k, self.top_gain, self.gain = k, top_gain, gain
        self.discounts, self.top_prefix = _discount_table(k, top_gain)
        top_a, top_b = query.grades_a[:k], query.grades_b[:k]
        gains = _gains([*top_a, *top_b, *query.judged], gain)
        gains_a, gains_b = gains[: len(top_a)], gains[len(top_a) : len(top_a) + len(top_b)]
        self.today_diff = _dcg(gains_b, self.discounts) - _dcg(gains_a, self.discounts)
        # Each unjudged chunk of either top k: its discount difference B − A (1/log2(r + 1)).
        self.shifts: dict[str, float] = {}
        for docids, grades, sign in ((query.docids_a, top_a, -1.0), (query.docids_b, top_b, 1.0)):
            for rank, (docid, grade) in enumerate(zip(docids[:k], grades, strict=True)):
                if grade is None:
                    shift = sign / self.discounts[rank]
                    self.shifts[docid] = self.shifts.get(docid, 0.0) + shift
        # The judged gains of the ideal, best first (only positive ones add to IDCG).
        self.ideal = sorted((g for g in gains[len(top_a) + len(top_b) :] if g > 0), reverse=True)
        self.idcg_cache: dict[int, float] = {}
        self.open = {docid: top_gain * shift for docid, shift in self.shifts.items()}
        self.today = self.today_diff / self.idcg(0) if self.idcg(0) > 0 else math.nan

    def idcg(self, extra: int) -> float:
        """IDCG@k with `extra` top-grade chunks joining the judged ones (they come first: the
        top grade is at least every grade)."""
        found = self.idcg_cache.get(extra)
        if found is None:
            t = min(extra, self.k)
            found = self.top_prefix[t] + sum(
                g / self.discounts[t + j] for j, g in enumerate(self.ideal[: self.k - t])
            )
            self.idcg_cache[extra] = found
        return found

    def label(self, docid: str, grade: float) -> bool:
        """The chunk is labeled `grade`: today's value and the ideal take it; False when it is
        neither open here nor relevant (nothing moves)."""
        gain = _gains([grade], self.gain)[0]
        was_open = self.open.pop(docid, None) is not None
        if gain <= 0:
            return was_open
        self.today_diff += gain * self.shifts.get(docid, 0.0) if was_open else 0.0
        self.ideal = sorted([*self.ideal, gain], reverse=True)
        self.idcg_cache.clear()
        self.today = self.today_diff / self.idcg(0)
        return True

    @property
    def if_top(self) -> float:
        """NDCG@k of B − A with the still-open unjudged chunks at the top grade."""
        return (self.today_diff + math.fsum(self.open.values())) / self.idcg(len(self.open))


@functools.lru_cache(maxsize=8)
def _discount_table(k: int, top_gain: float) -> tuple[list[float], list[float]]:
    """log2(r + 1) for r = 1..k, and the IDCG of t top gains for t = 0..k (read only)."""
    discounts = log2_ranks(k).tolist()
    prefix = [0.0]
    for d in discounts:
        prefix.append(prefix[-1] + top_gain / d)
    return discounts, prefix


def _gains(grades: Sequence[float | None], gain: GainKind) -> list[float]:
    """The gain rule (scoring.gain_values) of each grade; None (unjudged) gains 0."""
    values = np.array([np.nan if g is None else g for g in grades], dtype=np.float64)
    return gain_values(values, gain).tolist()


def _dcg(gains: Sequence[float], discounts: Sequence[float]) -> float:
    """DCG of gains in rank order."""
    return sum(g / d for g, d in zip(gains, discounts, strict=False) if g)


class _Means:
    """Running sums over the compared queries of today's and the top-grade differences."""

    def __init__(self, state: dict[str, _Query]) -> None:
        self.state = state
        self.today = {qid: q.today for qid, q in state.items()}
        self.top = {qid: q.if_top for qid, q in state.items()}
        self.sums = [math.fsum(self.today.values()), math.fsum(self.top.values())]

    def update(self, qid: str) -> None:
        """Query `qid` moved: a running sum, since one query changes per label."""
        query = self.state[qid]
        self.sums[0] += query.today - self.today[qid]
        self.sums[1] += query.if_top - self.top[qid]
        self.today[qid], self.top[qid] = query.today, query.if_top

    def add(self, qid: str, query: _Query) -> None:
        """Query `qid` is compared from now on (a label found its first relevant chunk)."""
        self.state[qid] = query
        self.today[qid], self.top[qid] = query.today, query.if_top
        self.sums[0] += query.today
        self.sums[1] += query.if_top

    def robust(self, exact: bool = False) -> bool:
        """The flip test; `exact` sums again (the running sums drift by rounding)."""
        if exact:
            self.sums = [math.fsum(self.today.values()), math.fsum(self.top.values())]
        count = len(self.state)
        return winner(self.sums[0] / count) == winner(self.sums[1] / count)


def labels_to_robust(
    queries: Sequence[FlipQuery],
    order: Sequence[tuple[str, str]],
    k: int,
    top_grade: float,
    gain: GainKind = "linear",
    revealed: Mapping[tuple[str, str], float] | None = None,
    start: FlipTest | None = None,
) -> Robustness:
    """The flip test and the labels remaining in `order` ((qid, docid) pairs) until it passes.

    Each label confirms today's value (grade 0) unless `revealed` gives its grade (the bench
    knows the true grades). A query whose ideal is empty (NDCG@k undefined) is left out, as the
    comparison leaves it out, until a label finds a relevant chunk there: from then on the
    comparison, and so the flip test, takes it in. See the module's docstring. `start`: the
    flip test of `queries`, when the caller has it (flip_test_flat); `queries` are then read
    only if it does not pass.
    """
    if start is None:
        start = flip_test(queries, k, top_grade, gain)
    today, if_top = start.delta, start.delta_if_top
    if start.robust:
        return Robustness(True, 0, today, if_top)
    top_gain = float(gain_values(np.array([top_grade], dtype=np.float64), gain)[0])
    every = {q.qid: _Query(q, k, top_gain, gain) for q in queries}
    # The compared queries, as flip_test keeps them (judged gain: IDCG@k > 0).
    state = {qid: query for qid, query in every.items() if query.idcg(0) > 0}
    means = _Means(state)
    grades = revealed or {}
    for m, (qid, docid) in enumerate(order, start=1):
        query = every.get(qid)
        if query is None or not query.label(docid, grades.get((qid, docid), 0.0)):
            continue  # a query of neither run, or a chunk beyond k found not relevant
        if qid in state:
            means.update(qid)
        elif query.idcg(0) > 0:
            means.add(qid, query)  # its first relevant chunk: compared from now on
        else:
            continue  # still no relevant chunk: still not compared
        # Near a tie the running sums could misjudge the sign: sum exactly before answering.
        near_tie = min(abs(v) for v in means.sums) <= 1e-9 * len(state)
        if (means.robust() or near_tie) and means.robust(exact=True):
            return Robustness(False, m, today, if_top)
    return Robustness(False, None, today, if_top)
