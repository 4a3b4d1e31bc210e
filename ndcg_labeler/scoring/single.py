"""Fast re-scoring of one query (the live dashboard path), same numbers as `evaluate`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .evaluation import DEFAULT_CUTOFFS, check_cutoffs
from .gains import gain_values, log2_ranks
from .types import Options

_DEFAULT_OPTIONS = Options()
_NAN = float("nan")


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
    cuts = check_cutoffs(cutoffs)
    grades = np.asarray(ranked_grades, dtype=np.float64)
    judged = np.asarray(judged_grades, dtype=np.float64)
    if np.isnan(judged).any():
        raise ValueError("judged grades must not be NaN")
    if options.judged_only:
        grades = grades[~np.isnan(grades)]
    n = grades.size

    gains = gain_values(grades, options.gain)
    if options.ideal == "retrieved":
        ideal = np.sort(gains)[::-1]
    else:
        ideal = gain_values(judged, options.gain)
        ideal = np.sort(ideal[ideal > 0])[::-1]
    dcg = _running_dcg(gains)
    idcg = _running_dcg(ideal)
    relevant = grades >= options.threshold
    rel_cum = _running_count(relevant)
    judged_cum = _running_count(~np.isnan(grades))
    num_rel = int(np.count_nonzero(judged >= options.threshold))
    ranks = np.flatnonzero(relevant) + 1.0
    precisions = np.arange(1.0, ranks.size + 1.0) / ranks
    precision_sum = float(np.cumsum(precisions)[-1]) if ranks.size else 0.0  # in rank order

    # Read every running total at the cutoffs in one indexing call each (tolist of a
    # whole 1,000-long array would cost more than all the arithmetic).
    at = np.minimum(np.array(cuts, dtype=np.intp), dcg.size) - 1
    iat = np.minimum(np.array(cuts, dtype=np.intp), idcg.size) - 1
    dcg_k = dcg[at].tolist()
    idcg_k = idcg[iat].tolist()
    rel_k = rel_cum[at].tolist()
    judged_k = judged_cum[at].tolist()
    dcg_total, idcg_total = float(dcg[-1]), float(idcg[-1])
    result: dict[str, float] = {
        "ndcg": _ratio(dcg_total, idcg_total),
        "dcg": dcg_total,
        "idcg": idcg_total,
        "recip_rank": (1.0 / float(ranks[0]) if ranks.size else 0.0) if num_rel else _NAN,
        "map": _ratio(precision_sum, num_rel),
        "num_rel": float(num_rel),
        "num_rel_ret": float(rel_cum[-1]),
        "num_ret": float(n),
    }
    for name, values in (
        ("ndcg_cut", [_ratio(d, i) for d, i in zip(dcg_k, idcg_k, strict=True)]),
        ("dcg_cut", dcg_k),
        ("idcg_cut", idcg_k),
        ("P", [r / k for r, k in zip(rel_k, cuts, strict=True)]),
        ("recall", [_ratio(r, num_rel) for r in rel_k]),
        ("judged_at", [j / k for j, k in zip(judged_k, cuts, strict=True)]),
    ):
        for k, value in zip(cuts, values, strict=True):
            result[f"{name}_{k}"] = value
    return result


def _running_dcg(gains: np.ndarray) -> np.ndarray:
    """DCG after each rank (gain / log2(rank + 1) added in rank order); [0.0] when empty."""
    if gains.size == 0:
        return np.zeros(1)
    return np.cumsum(gains / log2_ranks(gains.size))


def _running_count(flags: np.ndarray) -> np.ndarray:
    """How many flags are set up to each rank; [0] when empty."""
    if flags.size == 0:
        return np.zeros(1, dtype=np.int64)
    return np.cumsum(flags, dtype=np.int64)


def _ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, NaN when the denominator is 0 (undefined)."""
    return numerator / denominator if denominator > 0 else _NAN
