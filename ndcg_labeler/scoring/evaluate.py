"""Vectorised trec_eval-exact evaluation of many queries: NDCG, DCG, P, recall, RR, AP."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._ragged import check_offsets, pad, row_blocks
from .evaluation import DEFAULT_CUTOFFS, Evaluation, check_cutoffs
from .gains import gain_values, log2_ranks
from .single import evaluate_one
from .types import Options

__all__ = ["evaluate", "evaluate_flat", "evaluate_one"]

_DEFAULT_OPTIONS = Options()


def evaluate(
    ranked: Sequence[np.ndarray],
    judged: Sequence[np.ndarray],
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
    options: Options = _DEFAULT_OPTIONS,
) -> Evaluation:
    """Evaluate queries given each one's ranked grades (NaN = unjudged) and all judged grades.

    ranked[i] lists query i's grades in rank order after ranking and any depth cut; a query
    missing from the run has an empty ranked array. judged[i] holds every judged grade of
    query i (for IDCG and num_rel), whether retrieved or not.
    """
    if len(ranked) != len(judged):
        raise ValueError(f"{len(ranked)} ranked lists but {len(judged)} judged lists")
    grades, offsets = _concat(ranked)
    judged_grades, judged_offsets = _concat(judged)
    return evaluate_flat(grades, offsets, judged_grades, judged_offsets, cutoffs, options)


def evaluate_flat(
    grades: np.ndarray,
    offsets: np.ndarray | Sequence[int],
    judged: np.ndarray,
    judged_offsets: np.ndarray | Sequence[int],
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
    options: Options = _DEFAULT_OPTIONS,
) -> Evaluation:
    """`evaluate` on CSR input: query i's ranked grades are grades[offsets[i]:offsets[i + 1]]."""
    cuts = check_cutoffs(cutoffs)
    grades = np.asarray(grades, dtype=np.float64)
    judged = np.asarray(judged, dtype=np.float64)
    off = check_offsets(offsets, grades.size)
    joff = check_offsets(judged_offsets, judged.size, "judged_offsets")
    if off.size != joff.size:
        raise ValueError("offsets and judged_offsets must describe the same number of queries")
    if np.isnan(judged).any():
        raise ValueError("judged grades must not be NaN")
    if options.judged_only:
        grades, off = _drop_unjudged(grades, off)
    lengths = np.diff(off)
    jlengths = np.diff(joff)
    out = _Output(lengths.size, cuts)
    for r0, r1 in row_blocks(np.maximum(lengths, jlengths)):
        block = _Block(
            grades[off[r0] : off[r1]],
            lengths[r0:r1],
            judged[joff[r0] : joff[r1]],
            jlengths[r0:r1],
        )
        block.score(options, out, slice(r0, r1))
    return out.evaluation()


def _concat(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate 1-D arrays into (flat float64 values, offsets)."""
    parts = [np.asarray(a, dtype=np.float64).ravel() for a in arrays]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([p.size for p in parts], out=offsets[1:])
    flat = np.concatenate(parts) if parts else np.empty(0, dtype=np.float64)
    return flat, offsets


def _drop_unjudged(grades: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The condensed lists: unjudged entries removed, the order of the rest kept."""
    keep = ~np.isnan(grades)
    if keep.all():
        return grades, off
    rows = np.repeat(np.arange(off.size - 1), np.diff(off))
    lengths = np.bincount(rows[keep], minlength=off.size - 1)
    new_off = np.zeros(off.size, dtype=np.int64)
    np.cumsum(lengths, out=new_off[1:])
    return grades[keep], new_off


class _Output:
    """Preallocated per-query result arrays, filled block by block."""

    def __init__(self, n: int, cutoffs: tuple[int, ...]) -> None:
        self.cutoffs = cutoffs
        self.plain = {
            name: np.empty(n, dtype=np.float64)
            for name in ("ndcg", "dcg", "idcg", "recip_rank", "ap")
        }
        self.counts = {name: np.empty(n, dtype=np.int64) for name in ("num_rel", "num_rel_ret")}
        self.cut = {
            name: {k: np.empty(n, dtype=np.float64) for k in cutoffs}
            for name in ("ndcg_cut", "dcg_cut", "idcg_cut", "P", "recall", "judged_at")
        }
        self.num_ret = np.empty(n, dtype=np.int64)

    def evaluation(self) -> Evaluation:
        """Freeze the arrays into an `Evaluation`."""
        return Evaluation(
            cutoffs=self.cutoffs, num_ret=self.num_ret, **self.plain, **self.counts, **self.cut
        )


class _Block:
    """A run of consecutive queries, padded into 2-D matrices and scored column-wise."""

    def __init__(
        self, grades: np.ndarray, lengths: np.ndarray, judged: np.ndarray, jlengths: np.ndarray
    ) -> None:
        self.lengths = lengths
        self.grades = pad(grades, lengths, np.nan)  # padding is unjudged: no gain, not relevant
        self.judged = judged
        self.judged_rows = np.repeat(np.arange(lengths.size), jlengths)

    def score(self, options: Options, out: _Output, rows: slice) -> None:
        """Compute every measure of the block's queries into `out[rows]`."""
        grades = self.grades
        n, width = grades.shape
        last = {k: min(k, width) - 1 for k in out.cutoffs}

        gains = gain_values(grades, options.gain)
        ideal = self._ideal_gains(gains, options)
        dcg = _cumulative_dcg(gains)
        idcg = _cumulative_dcg(ideal)
        ilast = {k: min(k, ideal.shape[1]) - 1 for k in out.cutoffs}

        out.num_ret[rows] = self.lengths
        out.plain["dcg"][rows] = dcg[:, -1]
        out.plain["idcg"][rows] = idcg[:, -1]
        out.plain["ndcg"][rows] = _ratio(dcg[:, -1], idcg[:, -1])
        for k in out.cutoffs:
            out.cut["dcg_cut"][k][rows] = dcg[:, last[k]]
            out.cut["idcg_cut"][k][rows] = idcg[:, ilast[k]]
            out.cut["ndcg_cut"][k][rows] = _ratio(dcg[:, last[k]], idcg[:, ilast[k]])

        relevant = grades >= options.threshold  # NaN (unjudged, padding) compares False
        rel_cum = np.cumsum(relevant, axis=1, dtype=np.int32)
        judged_cum = np.cumsum(~np.isnan(grades), axis=1, dtype=np.int32)
        num_rel = np.bincount(self.judged_rows[self.judged >= options.threshold], minlength=n)
        has_rel = num_rel > 0
        out.counts["num_rel"][rows] = num_rel
        out.counts["num_rel_ret"][rows] = rel_cum[:, -1]
        for k in out.cutoffs:
            out.cut["P"][k][rows] = rel_cum[:, last[k]] / k
            out.cut["recall"][k][rows] = _ratio(rel_cum[:, last[k]], num_rel)
            out.cut["judged_at"][k][rows] = judged_cum[:, last[k]] / k

        # AP: precision at each relevant rank, summed in rank order like trec_eval (a running
        # sum, so the result does not depend on the padding), over num_rel (trec's `map`).
        precisions = np.divide(
            rel_cum, np.arange(1.0, width + 1.0), out=np.zeros(grades.shape), where=relevant
        )
        precision_sum = np.cumsum(precisions, axis=1, out=precisions)[:, -1]
        out.plain["ap"][rows] = _ratio(precision_sum, num_rel)
        first = np.argmax(relevant, axis=1) + 1.0
        reciprocal = np.where(rel_cum[:, -1] > 0, 1.0 / first, 0.0)
        out.plain["recip_rank"][rows] = np.where(has_rel, reciprocal, np.nan)

    def _ideal_gains(self, gains: np.ndarray, options: Options) -> np.ndarray:
        """Each query's ideal gains, best first, padded with 0."""
        if options.ideal == "retrieved":
            return np.sort(gains, axis=1)[:, ::-1]
        judged_gains = gain_values(self.judged, options.gain)
        positive = judged_gains > 0
        counts = np.bincount(self.judged_rows[positive], minlength=self.lengths.size)
        ideal = pad(judged_gains[positive], counts, 0.0)
        return np.sort(ideal, axis=1)[:, ::-1]


def _cumulative_dcg(gains: np.ndarray) -> np.ndarray:
    """Running DCG along each row: gains divided by log2(rank + 1), summed in rank order."""
    terms = gains / log2_ranks(gains.shape[1])
    return np.cumsum(terms, axis=1, out=terms)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is 0 (undefined)."""
    result = np.full(numerator.shape, np.nan)
    np.divide(numerator, denominator, out=result, where=denominator > 0)
    return result
