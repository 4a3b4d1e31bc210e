"""Averages over queries: trec_eval's `all` row, and our mean over defined values."""

from __future__ import annotations

import numpy as np

from .results import COUNT_MEASURES, Evaluation


def trec_all(
    evaluation: Evaluation,
    measure: str,
    in_run: np.ndarray | None = None,
    *,
    complete: bool = False,
) -> float:
    """The value trec_eval prints in its `all` row for `measure`.

    `evaluation` holds one row per qrels query; a query missing from the run is evaluated
    with an empty ranking and flagged False in `in_run` (None: all are in the run). Queries
    in the run but not in the qrels must be left out: trec_eval ignores them. Counts
    (num_rel, num_rel_ret, num_ret) are summed, other measures averaged; "num_q" counts.
    Without `complete` (trec_eval's default) only queries in the run take part; with it
    (`-c`) every qrels query does, and a missing query adds 0 (but its num_rel still counts).
    """
    mask = _in_run_mask(len(evaluation), in_run, complete)
    if measure == "num_q":
        return float(np.count_nonzero(mask))
    values = evaluation.trec_array(measure)[mask]
    if measure in COUNT_MEASURES:
        return float(values.sum())
    return float(values.mean()) if values.size else 0.0


def mean_defined(values: np.ndarray) -> tuple[float, int]:
    """Mean over the defined (non-NaN) values and how many there were; (NaN, 0) if none."""
    values = np.asarray(values, dtype=np.float64)
    defined = values[~np.isnan(values)]
    if defined.size == 0:
        return float("nan"), 0
    return float(defined.mean()), int(defined.size)


def _in_run_mask(n: int, in_run: np.ndarray | None, complete: bool) -> np.ndarray:
    """Which rows trec_eval's average covers."""
    if in_run is None or complete:
        return np.ones(n, dtype=bool)
    mask = np.asarray(in_run, dtype=bool)
    if mask.shape != (n,):
        raise ValueError(f"in_run must have one flag per query ({n})")
    return mask
