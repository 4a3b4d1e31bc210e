"""Evaluation, the per-query results: measure names, cutoffs and trec_eval's way of printing."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Measures computed at every cutoff k, named f"{prefix}_{k}" (trec_eval style).
CUT_MEASURES: tuple[str, ...] = (
    "ndcg_cut",
    "dcg_cut",
    "idcg_cut",
    "P",
    "recall",
    "judged_at",
    # Sensitivity to unjudged documents (module `sensitivity`): not trec_eval's.
    "ndcg_if_unjudged_top_cut",
    "ndcg_condensed_cut",
)
# Measures without a cutoff; "map" is trec_eval's name for per-query average precision.
PLAIN_MEASURES: tuple[str, ...] = (
    "ndcg",
    "dcg",
    "idcg",
    "recip_rank",
    "map",
    "num_rel",
    "num_rel_ret",
    "num_ret",
)
# Counts: trec_eval's `all` row sums these instead of averaging them.
COUNT_MEASURES: frozenset[str] = frozenset({"num_rel", "num_rel_ret", "num_ret"})

_CUT_NAME = re.compile(rf"^({'|'.join(CUT_MEASURES)})_(\d+)$")
_ALIASES = {"map": "ap"}


def check_cutoffs(cutoffs: Sequence[int]) -> tuple[int, ...]:
    """Cutoffs as a tuple after checking they are positive and distinct (as trec_eval does)."""
    cuts = tuple(int(k) for k in cutoffs)
    if any(k < 1 for k in cuts) or len(set(cuts)) != len(cuts):
        raise ValueError(f"cutoffs must be positive and distinct, not {cuts}")
    return cuts


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Per-query measure arrays (index i = query i); NaN marks an undefined value.

    Undefined: ndcg/ndcg_cut when the IDCG is 0; recall, recip_rank and ap when the
    query has no relevant judged document (num_rel == 0). trec_eval prints 0 for all of
    those: use `trec_array` / `trec_value` to reproduce its numbers.
    ndcg_if_unjudged_top_cut and ndcg_condensed_cut are NDCG@k if the unjudged documents of
    the top k had the top grade, and on the condensed list (module `sensitivity`).
    """

    cutoffs: tuple[int, ...]
    ndcg: np.ndarray
    dcg: np.ndarray
    idcg: np.ndarray
    ndcg_cut: dict[int, np.ndarray]
    dcg_cut: dict[int, np.ndarray]
    idcg_cut: dict[int, np.ndarray]
    P: dict[int, np.ndarray]
    recall: dict[int, np.ndarray]
    judged_at: dict[int, np.ndarray]
    ndcg_if_unjudged_top_cut: dict[int, np.ndarray]
    ndcg_condensed_cut: dict[int, np.ndarray]
    recip_rank: np.ndarray
    ap: np.ndarray
    num_rel: np.ndarray
    num_rel_ret: np.ndarray
    num_ret: np.ndarray

    def __len__(self) -> int:
        """Number of queries."""
        return int(self.ndcg.size)

    def measures(self) -> list[str]:
        """All measure names this evaluation holds, trec_eval style (e.g. ``ndcg_cut_10``)."""
        names = list(PLAIN_MEASURES)
        names += [f"{prefix}_{k}" for prefix in CUT_MEASURES for k in self.cutoffs]
        return names

    def array(self, measure: str) -> np.ndarray:
        """Per-query values of a measure by name, NaN where undefined (our convention)."""
        match = _CUT_NAME.match(measure)
        if match:
            table: dict[int, np.ndarray] = getattr(self, match.group(1))
            k = int(match.group(2))
            if k not in table:
                raise KeyError(f"cutoff {k} was not evaluated (cutoffs: {self.cutoffs})")
            return table[k]
        if measure in PLAIN_MEASURES or measure == "ap":
            return getattr(self, _ALIASES.get(measure, measure))
        raise KeyError(f"unknown measure {measure!r}")

    def trec_array(self, measure: str) -> np.ndarray:
        """Per-query values as trec_eval prints them: undefined values become 0."""
        return np.nan_to_num(self.array(measure).astype(np.float64), nan=0.0)

    def trec_value(self, measure: str, i: int) -> float:
        """trec_eval's value of `measure` for query i (0 where ours is undefined)."""
        value = float(self.array(measure)[i])
        return 0.0 if math.isnan(value) else value

    def row(self, i: int) -> dict[str, float]:
        """All measures of query i as a name -> value dict (NaN where undefined)."""
        return {name: float(self.array(name)[i]) for name in self.measures()}
