"""Per-query values of any parsed `Measure`, from ranked and judged grades (NaN where undefined).

The families `evaluate` computes (nDCG, P, R, AP, RR, Judged, the counts) go through it at the
measure's cutoff and rel level, so the numbers are the ones every page shows; the others
(Rprec, bpref, infAP, Success@k, AP@k, RR@k) come from `binary_measures`, one query at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from .binary_measures import (
    average_precision_at,
    bpref,
    inferred_ap,
    r_precision,
    reciprocal_rank_at,
    success_at,
)
from .many_queries import evaluate
from .measure_names import Measure
from .options import Options

_DEFAULT_OPTIONS = Options()

# family -> Evaluation's name: plain, or a prefix completed with _K.
_EVALUATED_PLAIN = {
    "nDCG": "ndcg",
    "AP": "map",
    "RR": "recip_rank",
    "NumRel": "num_rel",
    "NumRet": "num_ret",
    "NumRelRet": "num_rel_ret",
}
_EVALUATED_CUT = {"nDCG": "ndcg_cut", "P": "P", "R": "recall", "Judged": "judged_at"}


def evaluation_name(measure: Measure) -> str | None:
    """The `Evaluation` array holding the measure at its cutoff (None: computed here)."""
    if measure.cutoff is None:
        return _EVALUATED_PLAIN.get(measure.family)
    prefix = _EVALUATED_CUT.get(measure.family)
    return None if prefix is None else f"{prefix}_{measure.cutoff}"


def measure_options(measure: Measure, options: Options) -> Options:
    """The options the measure is scored under: its rel=R as the threshold."""
    return options if measure.rel is None else replace(options, threshold=measure.rel)


def measure_values(
    measure: Measure,
    ranked: Sequence[np.ndarray],
    judged: Sequence[np.ndarray],
    options: Options = _DEFAULT_OPTIONS,
) -> np.ndarray:
    """The measure of each query i from its ranked grades (NaN = unjudged) and judged grades.

    Inputs as `evaluate`'s; NaN marks an undefined value (trec_eval prints 0 there).
    """
    chosen = measure_options(measure, options)
    name = evaluation_name(measure)
    if name is not None:
        cutoffs = (measure.cutoff,) if measure.cutoff is not None else (10,)
        return evaluate(ranked, judged, cutoffs, chosen).array(name).astype(np.float64)
    out = np.empty(len(ranked), dtype=np.float64)
    rel = chosen.threshold
    for i, (grades, query_judged) in enumerate(zip(ranked, judged, strict=True)):
        grades = np.asarray(grades, dtype=np.float64)
        query_judged = np.asarray(query_judged, dtype=np.float64)
        if chosen.judged_only:
            grades = grades[~np.isnan(grades)]
        out[i] = _one(measure, grades, query_judged, rel)
    return out


def _one(measure: Measure, grades: np.ndarray, judged: np.ndarray, rel: int) -> float:
    """One query's value of a measure `evaluate` does not compute."""
    num_rel = int(np.count_nonzero(judged >= rel))
    k = measure.cutoff
    if measure.family == "Rprec":
        return r_precision(grades, num_rel, rel)
    if measure.family == "bpref":
        return bpref(grades, judged, rel)
    if measure.family == "infAP":
        return inferred_ap(grades, judged, rel)
    if measure.family == "Success" and k is not None:
        return success_at(grades, num_rel, rel, k)
    if measure.family == "AP" and k is not None:
        return average_precision_at(grades, num_rel, rel, k)
    if measure.family == "RR" and k is not None:
        return reciprocal_rank_at(grades, num_rel, rel, k)
    raise ValueError(f"no computation for {measure.canonical}")
