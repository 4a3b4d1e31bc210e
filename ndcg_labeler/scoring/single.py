"""Fast re-scoring of one query (the live dashboard path), same numbers as `evaluate`."""

from __future__ import annotations

import functools
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
    cuts, ks = _cutoff_array(tuple(cutoffs))
    grades = np.asarray(ranked_grades, dtype=np.float64)
    judged = np.asarray(judged_grades, dtype=np.float64)
    if np.isnan(judged).any():
        raise ValueError("judged grades must not be NaN")
    if options.judged_only:
        grades = grades[~np.isnan(grades)]

    # Work on the few positions that matter (positive gain, relevant, judged) and count
    # how many fall in the top k with searchsorted, instead of running sums over every rank.
    # Skipping zero-gain ranks cannot change a running sum, so DCG stays bit-identical.
    gains = gain_values(grades, options.gain)
    gain_at = np.flatnonzero(gains)
    dcg = _running_sum(gains[gain_at] / log2_ranks(grades.size)[gain_at])
    if options.ideal == "retrieved":
        ideal = np.sort(gains[gain_at])[::-1]
    else:
        ideal = gain_values(judged, options.gain)
        ideal = np.sort(ideal[ideal > 0])[::-1]
    idcg = _running_sum(ideal / log2_ranks(ideal.size))
    rel_at = np.flatnonzero(grades >= options.threshold)
    num_rel = int(np.count_nonzero(judged >= options.threshold))
    precisions = np.arange(1.0, rel_at.size + 1.0) / (rel_at + 1.0)
    precision_sum = float(_running_sum(precisions)[-1])  # in rank order, as trec_eval adds

    dcg_k = dcg[np.searchsorted(gain_at, ks)].tolist()
    idcg_k = idcg[np.minimum(ks, ideal.size)].tolist()
    rel_k = np.searchsorted(rel_at, ks).tolist()
    judged_k = np.searchsorted(np.flatnonzero(~np.isnan(grades)), ks).tolist()
    dcg_total, idcg_total = float(dcg[-1]), float(idcg[-1])
    result: dict[str, float] = {
        "ndcg": _ratio(dcg_total, idcg_total),
        "dcg": dcg_total,
        "idcg": idcg_total,
        "recip_rank": (1.0 / float(rel_at[0] + 1) if rel_at.size else 0.0) if num_rel else _NAN,
        "map": _ratio(precision_sum, num_rel),
        "num_rel": float(num_rel),
        "num_rel_ret": float(rel_at.size),
        "num_ret": float(grades.size),
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


@functools.lru_cache(maxsize=64)
def _cutoff_array(cutoffs: tuple[int, ...]) -> tuple[tuple[int, ...], np.ndarray]:
    """Checked cutoffs and a read-only array of them, cached: dashboards reuse a few sets."""
    cuts = check_cutoffs(cutoffs)
    ks = np.array(cuts, dtype=np.int64)
    ks.setflags(write=False)
    return cuts, ks


def _running_sum(terms: np.ndarray) -> np.ndarray:
    """[0, t1, t1 + t2, ...]: entry j is the sum of the first j terms, added in order."""
    running = np.zeros(terms.size + 1)
    np.cumsum(terms, out=running[1:])
    return running


def _ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, NaN when the denominator is 0 (undefined)."""
    return numerator / denominator if denominator > 0 else _NAN
