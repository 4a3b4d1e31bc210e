"""More measures in a comparison (`--measure`, `?measure=`): each run's mean and every run
against the first, on the queries where the measure is defined in all the runs.

The comparison's own figures (intervals, randomisation test, flips) stay NDCG@k's; a named
measure adds its means, mean difference, wins/ties/losses and the paired t-test (scipy's
ttest_rel through scoring.paired_t_test), the figures the gate decides on too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ndcg_labeler.models import Run
from ndcg_labeler.scoring import TIE_TOLERANCE, paired_t_test
from ndcg_labeler.services.live import ScoreOptions, named_measures


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def measures_block(
    runs: Sequence[Run], names: Iterable[str], options: ScoreOptions
) -> list[dict[str, Any]]:
    """The "measures" list of a comparison's JSON (empty when none was named)."""
    names = list(names)
    if not names:
        return []
    per_run = [named_measures(run, names, options) for run in runs]
    block = []
    for n in range(len(per_run[0])):
        found = [measures[n] for measures in per_run]
        defined = np.logical_and.reduce([~np.isnan(m.values) for m in found])
        values = [m.values[defined] for m in found]
        first = values[0]
        pairs = []
        for run, other in zip(runs[1:], values[1:], strict=True):
            d = other - first
            pairs.append(
                {
                    "a": runs[0].name,
                    "b": run.name,
                    "delta": _mean(d),
                    "wins": int(np.count_nonzero(d > TIE_TOLERANCE)),
                    "ties": int(np.count_nonzero(np.abs(d) <= TIE_TOLERANCE)),
                    "losses": int(np.count_nonzero(d < -TIE_TOLERANCE)),
                    "t_test_p": paired_t_test(first, other),
                }
            )
        measure = found[0].measure
        block.append(
            {
                "measure": measure.shown,
                "canonical": measure.canonical,
                "trec_eval": measure.trec_name,
                "queries": int(np.count_nonzero(defined)),
                "runs": [
                    {"run": run.name, "mean": _mean(v)} for run, v in zip(runs, values, strict=True)
                ],
                "pairs": pairs,
            }
        )
    return block
