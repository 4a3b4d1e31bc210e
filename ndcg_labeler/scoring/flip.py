"""The flip test: would the winner of B against A change if every unjudged chunk were relevant?

On the compared queries (those with judged gain, so that NDCG@k is defined in both runs),
today's values score an unjudged chunk 0 (trec_eval). The top-grade world gives every unjudged
chunk in the top k of EITHER run the scale's top grade, as if it had been judged so: those
grades join the query's judged grades (each chunk once), so both runs' ideals grow by the same
chunks, and each run's NDCG@k is computed on its own top k against that ideal (the same world
for both runs, which per-run sensitivity values alone would not give when one run's unjudged
chunk is absent from the other's top k). The winner is the sign of the mean over the compared
queries of B − A, a difference within TIE_TOLERANCE being a tie; the comparison is *robust* when
the winner (or the tie) is the same in both worlds. `unjudged_pairs` counts the distinct (query,
chunk) pairs the top-grade world changes.

`flip_test` is the one implementation: the comparison pages (services/comparison) and the
labels-until-robust figure (`next_labels.labels_to_robust`, which starts from it and then
updates the same world one label at a time) both call it. A caller whose today's values are
scored differently from the plain top k (condensed lists: `judged_only`) passes them in; one
whose ideal comes from the whole retrieved list (`ideal=retrieved`, which the top k does not
show) passes each run's own top-grade values too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

import numpy as np

from .gains import gain_values
from .many_queries import evaluate, evaluate_flat
from .options import GainKind, Options
from .significance import TIE_TOLERANCE

Q = TypeVar("Q")  # how a caller names its queries (ids, qids)
_NONE: Mapping[str, float] = {}


class FlipQuery(NamedTuple):
    """One query: each run's top-k docids with their grades (None: unjudged) and every judged
    grade of the query (its ideal)."""

    qid: str
    docids_a: Sequence[str]
    grades_a: Sequence[float | None]
    docids_b: Sequence[str]
    grades_b: Sequence[float | None]
    judged: Sequence[float]


@dataclass(frozen=True)
class FlipTest:
    """B against A today and with every unjudged top-k chunk of either run at the top grade."""

    robust: bool
    unjudged_pairs: int
    queries: int
    mean_a_if_top: float | None
    mean_b_if_top: float | None
    delta: float | None
    delta_if_top: float | None

    @property
    def flips_if_unjudged_top(self) -> bool:
        """The winner (or the tie) changes when the unjudged chunks get the top grade."""
        return not self.robust

    @property
    def winner(self) -> str:
        """ "A", "B" or "tie" today."""
        return winner(self.delta)

    @property
    def winner_if_top(self) -> str:
        """ "A", "B" or "tie" in the top-grade world."""
        return winner(self.delta_if_top)


def winner(delta: float | None) -> str:
    """ "B" when the mean of B − A exceeds TIE_TOLERANCE, "A" below −TIE_TOLERANCE, else "tie"."""
    if delta is None or abs(delta) <= TIE_TOLERANCE:
        return "tie"
    return "B" if delta > 0 else "A"


def _mean_difference(a: np.ndarray, b: np.ndarray) -> float:
    """mean(b − a), summed exactly (a tie must not hang on the order of the sum)."""
    return math.fsum((b - a).tolist()) / a.size


def compared(queries: Sequence[FlipQuery], gain: GainKind = "linear") -> list[FlipQuery]:
    """The queries the flip test compares: some judged grade has positive gain (IDCG@k > 0)."""
    out = []
    for query in queries:
        judged = np.asarray(query.judged, dtype=np.float64)
        if judged.size and bool((gain_values(judged, gain) > 0).any()):
            out.append(query)
    return out


def flip_test(
    queries: Sequence[FlipQuery],
    k: int,
    top_grade: float,
    gain: GainKind = "linear",
    today: tuple[np.ndarray, np.ndarray] | None = None,
    if_top: tuple[np.ndarray, np.ndarray] | None = None,
) -> FlipTest:
    """The flip test of B against A on the compared queries among `queries` (see the module).

    today / if_top: per-query (A, B) values over the compared queries in their order, when the
    caller scores them otherwise than the plain top k does; computed here when None.
    """
    kept = compared(queries, gain)
    if not kept:
        return FlipTest(True, 0, 0, None, None, None, None)
    unjudged = [_unjudged(q, k) for q in kept]
    if today is None:
        today = _today(kept, k, gain)
    if if_top is None:
        if_top = _if_top(kept, unjudged, k, top_grade, gain)
    return _verdict(today, if_top, sum(len(u) for u in unjudged), len(kept))


def _verdict(
    today: tuple[np.ndarray, np.ndarray],
    if_top: tuple[np.ndarray, np.ndarray],
    unjudged_pairs: int,
    queries: int,
) -> FlipTest:
    """The flip test from both worlds' per-query values over the `queries` compared ones."""
    a, b = (np.asarray(v, dtype=np.float64) for v in today)
    a_top, b_top = (np.asarray(v, dtype=np.float64) for v in if_top)
    if not a.size == b.size == a_top.size == b_top.size == queries:
        raise ValueError("today's and the top-grade values need one value per compared query")
    delta, delta_top = _mean_difference(a, b), _mean_difference(a_top, b_top)
    return FlipTest(
        robust=winner(delta) == winner(delta_top),
        unjudged_pairs=unjudged_pairs,
        queries=queries,
        mean_a_if_top=float(a_top.mean()),
        mean_b_if_top=float(b_top.mean()),
        delta=delta,
        delta_if_top=delta_top,
    )


@dataclass(frozen=True)
class FlipArrays:
    """The queries of a flip test as flat arrays (CSR): query i's top-k grades in A are
    grades_a[offsets_a[i]:offsets_a[i + 1]] (NaN: unjudged), likewise in B; its judged grades
    (its ideal) judged[judged_offsets[i]:judged_offsets[i + 1]]; unjudged[i] the number of
    distinct unjudged chunks in either top k. The same queries as a list of FlipQuery, without
    one Python object per query (7,000 queries: a tenth of the time)."""

    grades_a: np.ndarray
    offsets_a: np.ndarray
    grades_b: np.ndarray
    offsets_b: np.ndarray
    judged: np.ndarray
    judged_offsets: np.ndarray
    unjudged: np.ndarray


def flip_test_flat(
    queries: FlipArrays,
    k: int,
    top_grade: float,
    gain: GainKind = "linear",
    today: tuple[np.ndarray, np.ndarray] | None = None,
    if_top: tuple[np.ndarray, np.ndarray] | None = None,
) -> FlipTest:
    """flip_test on FlipArrays (top-k grades already cut at k): the same figures, bit for bit."""
    judged_rows = _rows(queries.judged_offsets)
    positive = gain_values(queries.judged, gain) > 0
    n = queries.unjudged.size
    kept = np.bincount(judged_rows[positive], minlength=n) > 0
    if not kept.any():
        return FlipTest(True, 0, 0, None, None, None, None)
    grades_a, offsets_a = _take(queries.grades_a, queries.offsets_a, kept)
    grades_b, offsets_b = _take(queries.grades_b, queries.offsets_b, kept)
    judged, judged_offsets = _take(queries.judged, queries.judged_offsets, kept)
    unjudged = queries.unjudged[kept]
    options = Options(gain=gain)
    if today is None:
        today = (
            evaluate_flat(grades_a, offsets_a, judged, judged_offsets, (k,), options).ndcg_cut[k],
            evaluate_flat(grades_b, offsets_b, judged, judged_offsets, (k,), options).ndcg_cut[k],
        )
    if if_top is None:
        # Every unjudged chunk of either top k joins the judged grades at the top grade (each
        # once, after them, as _if_top puts them) and takes it in the lists.
        ideal, ideal_offsets = _append(judged, judged_offsets, unjudged, top_grade)
        if_top = tuple(  # type: ignore[assignment]
            evaluate_flat(
                np.where(np.isnan(grades), top_grade, grades),
                offsets,
                ideal,
                ideal_offsets,
                (k,),
                options,
            ).ndcg_cut[k]
            for grades, offsets in ((grades_a, offsets_a), (grades_b, offsets_b))
        )
    assert if_top is not None
    return _verdict(today, if_top, int(unjudged.sum()), int(np.count_nonzero(kept)))


def flip_arrays(
    keys: Sequence[Q],
    lists_a: Mapping[Q, Sequence[str]],
    lists_b: Mapping[Q, Sequence[str]],
    grades: Mapping[Q, Mapping[str, float]],
    k: int,
) -> FlipArrays:
    """The queries `keys` (in that order) as FlipArrays: each one's two top-k lists (docids
    best first, absent: empty) as grades (NaN: unjudged), its judged grades (`grades`, in
    their order) and its distinct unjudged chunks. The queries flip_test would get as
    FlipQuery(key, top_a, grades of top_a, top_b, grades of top_b, judged grades)."""
    flat_a: list[float | None] = []
    flat_b: list[float | None] = []
    judged_flat: list[float] = []
    lengths = np.empty((3, len(keys)), dtype=np.int64)
    unjudged = np.empty(len(keys), dtype=np.int64)
    for i, q in enumerate(keys):
        judged = grades.get(q, _NONE)
        top_a, top_b = lists_a.get(q, ())[:k], lists_b.get(q, ())[:k]
        found_a = [judged.get(d) for d in top_a]
        found_b = [judged.get(d) for d in top_b]
        flat_a += found_a
        flat_b += found_b
        judged_flat += judged.values()
        lengths[:, i] = (len(top_a), len(top_b), len(judged))
        if None in found_a or None in found_b:
            chunks = {d for d, g in zip(top_a, found_a, strict=True) if g is None}
            chunks.update(d for d, g in zip(top_b, found_b, strict=True) if g is None)
            unjudged[i] = len(chunks)
        else:
            unjudged[i] = 0
    offsets = np.zeros((3, len(keys) + 1), dtype=np.int64)
    np.cumsum(lengths, axis=1, out=offsets[:, 1:])
    # float64 arrays from Python lists: None becomes NaN, the unjudged mark.
    return FlipArrays(
        grades_a=np.array(flat_a, dtype=np.float64),
        offsets_a=offsets[0],
        grades_b=np.array(flat_b, dtype=np.float64),
        offsets_b=offsets[1],
        judged=np.array(judged_flat, dtype=np.float64),
        judged_offsets=offsets[2],
        unjudged=unjudged,
    )


def _rows(offsets: np.ndarray) -> np.ndarray:
    """The row of every flat value of a CSR layout."""
    return np.repeat(np.arange(offsets.size - 1), np.diff(offsets))


def _take(flat: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR layout of the rows where `rows` (a mask) holds, in their order."""
    lengths = np.diff(offsets)
    kept_offsets = np.zeros(int(np.count_nonzero(rows)) + 1, dtype=np.int64)
    np.cumsum(lengths[rows], out=kept_offsets[1:])
    return flat[np.repeat(rows, lengths)], kept_offsets


def _append(
    flat: np.ndarray, offsets: np.ndarray, counts: np.ndarray, value: float
) -> tuple[np.ndarray, np.ndarray]:
    """Each row of a CSR layout followed by counts[i] copies of `value`."""
    lengths = np.diff(offsets)
    new_offsets = np.zeros(offsets.size, dtype=np.int64)
    np.cumsum(lengths + counts, out=new_offsets[1:])
    out = np.full(int(new_offsets[-1]), value, dtype=np.float64)
    rows = _rows(offsets)
    out[new_offsets[rows] + (np.arange(flat.size) - offsets[rows])] = flat
    return out, new_offsets


def _unjudged(query: FlipQuery, k: int) -> set[str]:
    """The distinct unjudged chunks of either run's top k."""
    found = set()
    for docids, grades in ((query.docids_a, query.grades_a), (query.docids_b, query.grades_b)):
        found.update(d for d, g in zip(docids[:k], grades[:k], strict=True) if g is None)
    return found


def _ranked(docids: Sequence[str], grades: Sequence[float | None], fill: float) -> np.ndarray:
    """A run's top-k grades in rank order, an unjudged chunk taking `fill` (NaN: unjudged)."""
    return np.array([fill if g is None else g for g in grades], dtype=np.float64)


def _today(queries: list[FlipQuery], k: int, gain: GainKind) -> tuple[np.ndarray, np.ndarray]:
    """Each run's NDCG@k with unjudged chunks at 0 against the judged grades (trec_eval)."""
    options = Options(gain=gain)
    judged = [np.asarray(q.judged, dtype=np.float64) for q in queries]
    out = []
    for side in ("a", "b"):
        ranked = [
            _ranked(getattr(q, f"docids_{side}")[:k], getattr(q, f"grades_{side}")[:k], np.nan)
            for q in queries
        ]
        out.append(evaluate(ranked, judged, (k,), options).ndcg_cut[k])
    return out[0], out[1]


def _if_top(
    queries: list[FlipQuery], unjudged: list[set[str]], k: int, top: float, gain: GainKind
) -> tuple[np.ndarray, np.ndarray]:
    """Each run's NDCG@k in the top-grade world: its unjudged chunks at `top`, and every
    unjudged chunk of either top k joining the judged grades at `top` (each once)."""
    options = Options(gain=gain)
    judged = [
        np.array([*q.judged, *[top] * len(u)], dtype=np.float64)
        for q, u in zip(queries, unjudged, strict=True)
    ]
    out = []
    for side in ("a", "b"):
        ranked = [
            _ranked(getattr(q, f"docids_{side}")[:k], getattr(q, f"grades_{side}")[:k], top)
            for q in queries
        ]
        out.append(evaluate(ranked, judged, (k,), options).ndcg_cut[k])
    return out[0], out[1]
