"""Every measure of one query (the live dashboard's re-scoring path), same numbers as `evaluate`.

Each measure family looks only at the few ranks that matter to it (positive gain, relevant,
judged) and counts those in the top k with searchsorted, instead of running sums over every
rank: re-scoring the query whose grade just changed takes microseconds, not a whole block.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from ._arithmetic import ratio
from ._ragged import pad
from .average_precision import average_precision
from .gains import gain_values
from .judged import judged_count_rows, judged_in_top, judged_share
from .ndcg import dcg_at_cutoffs
from .options import DEFAULT_CUTOFFS, Options
from .precision_recall import num_relevant, precision, recall, relevant_ranks
from .reciprocal_rank import reciprocal_rank
from .results import check_cutoffs
from .sensitivity import Sensitivity, sensitivity_rows

_DEFAULT_OPTIONS = Options()


def evaluate_one(
    ranked_grades: np.ndarray | Sequence[float],
    judged_grades: np.ndarray | Sequence[int],
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
    options: Options = _DEFAULT_OPTIONS,
) -> dict[str, float]:
    """All measures of one query as a name -> value dict (NaN where undefined).

    ranked_grades: grades in rank order after ranking and depth cut, NaN = unjudged;
    judged_grades: every judged grade of the query. Keys are `Evaluation.measures()` names.
    """
    cuts, ks = _cutoff_array(tuple(cutoffs))
    grades = np.asarray(ranked_grades, dtype=np.float64)
    judged = np.asarray(judged_grades, dtype=np.float64)
    if np.isnan(judged).any():
        raise ValueError("judged grades must not be NaN")
    if options.judged_only:
        grades = grades[~np.isnan(grades)]

    graded = dcg_at_cutoffs(grades, judged, ks, options)
    relevant_at = relevant_ranks(grades, options.threshold)
    num_rel = num_relevant(judged, options.threshold)
    relevant_k = np.searchsorted(relevant_at, ks).tolist()
    judged_k = judged_in_top(grades, ks)
    ndcg_at = [ratio(d, i) for d, i in zip(graded.dcg_at, graded.idcg_at, strict=True)]
    found = _sensitivity(grades, judged, (graded.dcg_at, graded.idcg_at, ndcg_at), ks, options)
    result: dict[str, float] = {
        "ndcg": ratio(graded.dcg, graded.idcg),
        "dcg": graded.dcg,
        "idcg": graded.idcg,
        "recip_rank": reciprocal_rank(relevant_at, num_rel),
        "map": average_precision(relevant_at, num_rel),
        "num_rel": float(num_rel),
        "num_rel_ret": float(relevant_at.size),
        "num_ret": float(grades.size),
    }
    for name, values in (
        ("ndcg_cut", ndcg_at),
        ("dcg_cut", graded.dcg_at),
        ("idcg_cut", graded.idcg_at),
        ("P", [precision(r, k) for r, k in zip(relevant_k, cuts, strict=True)]),
        ("recall", [recall(r, num_rel) for r in relevant_k]),
        ("judged_at", [judged_share(j, k) for j, k in zip(judged_k, cuts, strict=True)]),
        ("ndcg_if_unjudged_top_cut", found.if_unjudged_top[0].tolist()),
        ("ndcg_condensed_cut", found.condensed[0].tolist()),
    ):
        for k, value in zip(cuts, values, strict=True):
            result[f"{name}_{k}"] = value
    return result


def _sensitivity(
    grades: np.ndarray,
    judged: np.ndarray,
    at_k: tuple[list[float], list[float], list[float]],
    ks: np.ndarray,
    options: Options,
) -> Sensitivity:
    """The sensitivity values of the query as a one-row block (the same bits as `evaluate`)."""
    lengths = np.array([grades.size], dtype=np.int64)
    base = gain_values(grades if options.ideal == "retrieved" else judged, options.gain)
    ideal = np.sort(base[base > 0])[::-1]
    matrices = tuple(np.array([values], dtype=np.float64) for values in at_k)
    return sensitivity_rows(
        grades,
        lengths,
        judged_count_rows(pad(grades, lengths, np.nan)),
        pad(ideal, np.array([ideal.size]), 0.0),
        matrices,  # type: ignore[arg-type]
        ks,
        options,
    )


@functools.lru_cache(maxsize=64)
def _cutoff_array(cutoffs: tuple[int, ...]) -> tuple[tuple[int, ...], np.ndarray]:
    """Checked cutoffs and a read-only array of them, cached: dashboards reuse a few sets."""
    cuts = check_cutoffs(cutoffs)
    ks = np.array(cuts, dtype=np.int64)
    ks.setflags(write=False)
    return cuts, ks
