"""Every measure of many queries at once: rows of queries padded into matrices, block by block.

The measures are defined in their own modules (`ndcg`, `precision_recall`, `average_precision`,
`reciprocal_rank`, `judged`); this module feeds them whole blocks of queries, which is what makes
scoring a 7,000-query run fast. `one_query` gives the same numbers for one query, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._arithmetic import ratios
from ._ragged import check_offsets, pad, row_blocks
from .average_precision import average_precision_rows
from .gains import gain_values
from .judged import judged_count_rows, judged_share
from .ndcg import ideal_gain_rows, running_dcg
from .options import DEFAULT_CUTOFFS, Options
from .precision_recall import num_relevant_rows, precision, recall_rows, relevant_rows
from .reciprocal_rank import reciprocal_rank_rows
from .results import CUT_MEASURES, Evaluation, check_cutoffs
from .sensitivity import sensitivity_rows

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
            name: {k: np.empty(n, dtype=np.float64) for k in cutoffs} for name in CUT_MEASURES
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
        self.flat = grades
        self.grades = pad(grades, lengths, np.nan)  # padding is unjudged: no gain, not relevant
        self.judged = judged
        self.judged_rows = np.repeat(np.arange(lengths.size), jlengths)

    def score(self, options: Options, out: _Output, rows: slice) -> None:
        """Compute every measure of the block's queries into `out[rows]`."""
        out.num_ret[rows] = self.lengths
        judged_cum = judged_count_rows(self.grades)
        self._graded(options, out, rows, judged_cum)
        self._binary(options, out, rows, judged_cum)

    def _graded(self, options: Options, out: _Output, rows: slice, judged_cum: np.ndarray) -> None:
        """(n)DCG and IDCG, over the whole list and at each cutoff, and their sensitivity."""
        gains = gain_values(self.grades, options.gain)
        dcg = running_dcg(gains)
        ideal = ideal_gain_rows(gains, self.judged, self.judged_rows, options)
        idcg = running_dcg(ideal)
        out.plain["dcg"][rows] = dcg[:, -1]
        out.plain["idcg"][rows] = idcg[:, -1]
        out.plain["ndcg"][rows] = ratios(dcg[:, -1], idcg[:, -1])
        ks = np.array(out.cutoffs, dtype=np.int64)
        at_k = (
            dcg[:, np.minimum(ks, dcg.shape[1]) - 1],
            idcg[:, np.minimum(ks, idcg.shape[1]) - 1],
        )
        at_k += (ratios(*at_k),)
        for c, k in enumerate(out.cutoffs):
            out.cut["dcg_cut"][k][rows] = at_k[0][:, c]
            out.cut["idcg_cut"][k][rows] = at_k[1][:, c]
            out.cut["ndcg_cut"][k][rows] = at_k[2][:, c]
        found = sensitivity_rows(self.flat, self.lengths, judged_cum, ideal, at_k, ks, options)
        for c, k in enumerate(out.cutoffs):
            out.cut["ndcg_if_unjudged_top_cut"][k][rows] = found.if_unjudged_top[:, c]
            out.cut["ndcg_condensed_cut"][k][rows] = found.condensed[:, c]

    def _binary(self, options: Options, out: _Output, rows: slice, judged_cum: np.ndarray) -> None:
        """The measures of relevant or not (P, recall, AP, RR, the counts), and Judged@k."""
        grades = self.grades
        relevant, relevant_cum = relevant_rows(grades, options.threshold)
        num_rel = num_relevant_rows(
            self.judged, self.judged_rows, options.threshold, grades.shape[0]
        )
        out.counts["num_rel"][rows] = num_rel
        out.counts["num_rel_ret"][rows] = relevant_cum[:, -1]
        for k in out.cutoffs:
            column = _column(k, grades)
            out.cut["P"][k][rows] = precision(relevant_cum[:, column], k)
            out.cut["recall"][k][rows] = recall_rows(relevant_cum[:, column], num_rel)
            out.cut["judged_at"][k][rows] = judged_share(judged_cum[:, column], k)
        out.plain["ap"][rows] = average_precision_rows(relevant, relevant_cum, num_rel)
        out.plain["recip_rank"][rows] = reciprocal_rank_rows(relevant, relevant_cum, num_rel)


def _column(k: int, matrix: np.ndarray) -> int:
    """The column holding rank k's running value (the last one when the rows are shorter)."""
    return min(k, matrix.shape[1]) - 1
