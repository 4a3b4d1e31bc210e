"""What to label next for a decision between two runs, and how many labels until it is robust.

Order (item 4 of issue 29). Every unjudged (query, chunk) pair in run A's or run B's top K is
weighted by how much its grade could move the difference B − A:

    weight = top_grade × |1/log2(rank_A + 1) − 1/log2(rank_B + 1)|

where a run's term is 0 when it does not retrieve the chunk within its top K. Pairs are listed
by weight, largest first; ties by qid, then docid, both in byte order (UTF-8 byte order is code
point order, which is Python's string order: "B" < "a", "q10" < "q9").

Flip test and labels remaining. On the queries compared today (NDCG@k defined in both runs),
today's values score unjudged chunks 0 (trec_eval). The top-grade values give every unjudged
chunk of either run's top k the scale's top grade; those chunks also join the ideal (each
once). The comparison is robust when the winner (the sign of the mean of B − A, a tie within
TIE_TOLERANCE) is the same under both. Labels remaining is the smallest m such that, with the
first m pairs of the order labeled and each label confirming today's value (grade 0, not
relevant), the flip test passes; the rest stay at the top grade. It is an estimate: a label
that finds a relevant chunk moves today's values as well, so it is computed again after every
label. None when even the whole list does not make it pass (the list is cut at a depth K
below k, so unjudged chunks remain at the top grade).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from .gains import gain_values
from .ndcg import log2_ranks
from .options import GainKind
from .significance import TIE_TOLERANCE


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
    out: list[NextLabel] = []
    for qid in sorted(set(tops_a) | set(tops_b)):
        seen = judged.get(qid, ())
        ranks_a = _ranks(tops_a.get(qid, ()), depth)
        ranks_b = _ranks(tops_b.get(qid, ()), depth)
        for docid in set(ranks_a) | set(ranks_b):
            if docid in seen:
                continue
            rank_a, rank_b = ranks_a.get(docid), ranks_b.get(docid)
            weight = top_grade * abs(_discount(rank_a) - _discount(rank_b))
            out.append(NextLabel(qid, docid, weight, rank_a, rank_b))
    out.sort(key=lambda item: (-item.weight, item.qid, item.docid))
    return out


def _ranks(docids: Sequence[str], depth: int) -> dict[str, int]:
    """{docid: its best 1-based rank} within the top `depth`."""
    ranks: dict[str, int] = {}
    for rank, docid in enumerate(docids[:depth], start=1):
        ranks.setdefault(docid, rank)
    return ranks


class FlipQuery(NamedTuple):
    """One compared query: each run's top-k docids with their grades (None: unjudged) and
    every judged grade of the query (its ideal)."""

    qid: str
    docids_a: Sequence[str]
    grades_a: Sequence[float | None]
    docids_b: Sequence[str]
    grades_b: Sequence[float | None]
    judged: Sequence[float]


class Robustness(NamedTuple):
    """The flip test now and the labels (in the given order) until it passes."""

    robust: bool
    labels_remaining: int | None
    mean_delta: float | None
    """Mean of B − A under today's values (None: no compared query)."""
    mean_delta_if_top: float | None
    """Mean of B − A with every unjudged chunk of either top k at the top grade."""


def _winner(delta: float) -> int:
    """+1 when B wins, −1 when A wins, 0 for a tie within TIE_TOLERANCE."""
    return 0 if abs(delta) <= TIE_TOLERANCE else (1 if delta > 0 else -1)


class _Query:
    """One query's today and top-grade NDCG difference as its unjudged chunks are labeled."""

    def __init__(self, query: FlipQuery, k: int, top_gain: float, gain: GainKind) -> None:
        discounts = log2_ranks(k)
        self.today_diff = _dcg(query.grades_b, k, gain, discounts) - _dcg(
            query.grades_a, k, gain, discounts
        )
        # Each unjudged chunk of either top k: its gain-weighted discount difference B − A.
        self.moves: dict[str, float] = {}
        for docids, grades, sign in (
            (query.docids_a, query.grades_a, -1.0),
            (query.docids_b, query.grades_b, 1.0),
        ):
            for rank, (docid, grade) in enumerate(zip(docids[:k], grades[:k], strict=True)):
                if grade is None:
                    move = sign * top_gain / float(discounts[rank])
                    self.moves[docid] = self.moves.get(docid, 0.0) + move
        self.idcg = _ideal_dcgs(query.judged, len(self.moves), k, top_gain, gain, discounts)
        self.open = dict(self.moves)

    @property
    def today(self) -> float:
        """NDCG@k of B − A with unjudged chunks at 0."""
        return self.today_diff / self.idcg[0]

    @property
    def if_top(self) -> float:
        """NDCG@k of B − A with the still-open unjudged chunks at the top grade."""
        return (self.today_diff + math.fsum(self.open.values())) / self.idcg[len(self.open)]


def _dcg(grades: Sequence[float | None], k: int, gain: GainKind, discounts: np.ndarray) -> float:
    """DCG@k with unjudged (None) at 0."""
    values = np.array([np.nan if g is None else g for g in grades[:k]], dtype=np.float64)
    return float((gain_values(values, gain) / discounts[: values.size]).sum())


def _ideal_dcgs(
    judged: Sequence[float],
    extra: int,
    k: int,
    top_gain: float,
    gain: GainKind,
    discounts: np.ndarray,
) -> np.ndarray:
    """IDCG@k with t top-grade chunks added to the judged ones, for t = 0..extra."""
    gains = np.sort(gain_values(np.asarray(judged, dtype=np.float64), gain))[::-1][:k]
    padded = np.zeros(k, dtype=np.float64)
    padded[: gains.size] = gains
    # Row t: t top gains first (the top grade is at least every grade), then the judged ones.
    shift = np.arange(k)[None, :] - np.arange(extra + 1)[:, None]
    rows = np.where(shift < 0, top_gain, padded[np.clip(shift, 0, k - 1)])
    return (rows / discounts[:k]).sum(axis=1)


def labels_to_robust(
    queries: Sequence[FlipQuery],
    order: Sequence[tuple[str, str]],
    k: int,
    top_grade: float,
    gain: GainKind = "linear",
) -> Robustness:
    """The flip test and the labels remaining in `order` ((qid, docid) pairs) until it passes.

    Queries whose ideal is empty today (NDCG@k undefined) are left out, as the comparison
    leaves them out. See the module's docstring for the definitions.
    """
    top_gain = float(gain_values(np.array([top_grade], dtype=np.float64), gain)[0])
    state: dict[str, _Query] = {}
    for query in queries:
        built = _Query(query, k, top_gain, gain)
        if built.idcg[0] > 0:
            state[query.qid] = built
    if not state:
        return Robustness(True, 0, None, None)
    count = len(state)
    today = math.fsum(q.today for q in state.values()) / count
    values = {qid: q.if_top for qid, q in state.items()}
    if_top = math.fsum(values.values()) / count
    target = _winner(today)
    if _winner(if_top) == target:
        return Robustness(True, 0, today, if_top)
    total = if_top * count
    for m, (qid, docid) in enumerate(order, start=1):
        query = state.get(qid)
        if query is None or query.open.pop(docid, None) is None:
            continue  # judged, beyond k, or a query not compared: nothing moves
        value = query.if_top
        total += value - values[qid]  # a running sum: one query changes per label
        values[qid] = value
        # The running sum drifts by rounding; an exact sum confirms before answering.
        if _winner(total / count) == target or abs(total / count) <= 1e-9:
            total = math.fsum(values.values())
            if _winner(total / count) == target:
                return Robustness(False, m, today, if_top)
    return Robustness(False, None, today, if_top)
