"""The release gate: does a candidate run regress against a baseline, measure by measure?

For each measure asked for, both runs are scored on the test set's queries with the live
scoring engine. As in the comparison page, a query whose value is undefined in either run
(e.g. NDCG with IDCG 0) is left out of both, so the two means cover the same queries and the
paired t-test (scipy's ttest_rel, two-sided) pairs them. The p-values are adjusted with Holm's
method across the measures. A measure regresses when candidate − baseline < −max_drop and its
adjusted p-value < alpha.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.scoring import TIE_TOLERANCE, holm, paired_t_test
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services.live import RunScores, ScoreOptions, score_run

DEFAULT_MEASURES = ("ndcg_cut_10",)
LABEL_SOURCES = ("human",)
# measure name -> (RunScores field, whether the name carries a cutoff)
_MEASURES = {
    "ndcg_cut": ("ndcg", True),
    "P": ("precision", True),
    "recall": ("recall", True),
    "map": ("ap", False),
    "recip_rank": ("recip_rank", False),
}
_NAME = re.compile(r"^(ndcg_cut|P|recall)_([1-9][0-9]{0,4})$|^(map|recip_rank)$")
MEASURE_HELP = "ndcg_cut_K, P_K, recall_K (K from 1 to 99999), map, recip_rank"
WORST = 5


@dataclass(frozen=True)
class QueryChange:
    """One query's value in both runs and the change (candidate − baseline)."""

    qid: str
    baseline: float
    candidate: float
    delta: float


@dataclass(frozen=True)
class MeasureCheck:
    """One measure's verdict: means, delta, raw and Holm-adjusted p-values."""

    measure: str
    baseline: float | None
    candidate: float | None
    delta: float | None
    queries: int
    p_value: float | None
    p_adjusted: float | None
    regressed: bool
    worst: tuple[QueryChange, ...]

    def to_json(self) -> dict[str, Any]:
        """The measure's entry in the gate's JSON."""
        return {
            "measure": self.measure,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "delta": self.delta,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "regressed": self.regressed,
        }


@dataclass(frozen=True)
class GateResult:
    """The verdict over every measure: passed when none regressed."""

    testset: str
    baseline: str
    candidate: str
    max_drop: float
    alpha: float
    labels: str
    measures: tuple[MeasureCheck, ...]

    @property
    def passed(self) -> bool:
        """True when no measure regressed."""
        return not any(m.regressed for m in self.measures)

    def to_json(self) -> dict[str, Any]:
        """The JSON of `flask gate --json` and of the API."""
        return {
            "testset": self.testset,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "passed": self.passed,
            "measures": [m.to_json() for m in self.measures],
        }


def parse_measures(names: list[str] | tuple[str, ...] | None) -> list[str]:
    """The measure names, checked and without repeats (default: ndcg_cut_10)."""
    chosen: list[str] = []
    for raw in names or DEFAULT_MEASURES:
        for name in str(raw).replace(",", " ").split():
            if not _NAME.match(name):
                raise ServiceError(f"unknown measure '{name}': use {MEASURE_HELP}")
            if name not in chosen:
                chosen.append(name)
    if not chosen:
        raise ServiceError(f"name at least one measure: {MEASURE_HELP}")
    return chosen


def check_labels(labels: str) -> str:
    """The label source: `human` today; `fill:JUDGE` and `machine:JUDGE` need machine judges."""
    labels = (labels or "human").strip()
    if labels in LABEL_SOURCES:
        return labels
    if labels.startswith(("fill:", "machine:")):
        raise ServiceError(f"no machine judges yet: --labels {labels} is not available; use human")
    raise ServiceError(
        f"--labels must be human (or fill:JUDGE once machine judges exist), not '{labels}'"
    )


def check_threshold(name: str, value: float, low: float, high: float) -> float:
    """A finite number within [low, high] (max-drop, alpha)."""
    if isinstance(value, bool) or not math.isfinite(value) or not low <= value <= high:
        raise ServiceError(f"{name} must be a number from {low:g} to {high:g}, not {value}")
    return float(value)


def _split(measure: str) -> tuple[str, int]:
    """(RunScores field, cutoff k) of a checked measure name."""
    if measure in _MEASURES:
        return _MEASURES[measure][0], 10
    prefix, _, k = measure.rpartition("_")
    return _MEASURES[prefix][0], int(k)


def _values(result: RunScores, field: str) -> np.ndarray:
    return np.asarray(getattr(result, field), dtype=np.float64)


def _check_one(measure: str, base: RunScores, cand: RunScores) -> tuple[MeasureCheck, float | None]:
    field, _ = _split(measure)
    a, b = _values(base, field), _values(cand, field)
    keep = ~(np.isnan(a) | np.isnan(b))
    x, y = a[keep], b[keep]
    qids = [q for q, kept in zip(base.qids, keep.tolist(), strict=True) if kept]
    p = _p_value(x, y)
    mean_a = float(x.mean()) if x.size else None
    mean_b = float(y.mean()) if y.size else None
    delta = None if mean_a is None or mean_b is None else mean_b - mean_a
    changes = [
        QueryChange(q, float(u), float(v), float(v - u))
        for q, u, v in zip(qids, x.tolist(), y.tolist(), strict=True)
    ]
    changes.sort(key=lambda c: (c.delta, c.qid))
    worst = tuple(c for c in changes[:WORST] if c.delta < -TIE_TOLERANCE)
    check = MeasureCheck(measure, mean_a, mean_b, delta, int(x.size), p, None, False, worst)
    return check, p


def _p_value(x: np.ndarray, y: np.ndarray) -> float | None:
    """Two-sided paired t-test p-value; 0 when every query moves by the same non-zero amount
    (no variance: t is infinite), None with fewer than two paired queries."""
    if x.size < 2:
        return None
    p = paired_t_test(x, y)
    return 0.0 if p is None else p


def run_gate(
    test_set: TestSet,
    baseline: Run,
    candidate: Run,
    measures: list[str] | tuple[str, ...] | None = None,
    max_drop: float = 0.0,
    alpha: float = 0.05,
    labels: str = "human",
) -> GateResult:
    """Check every measure of `candidate` against `baseline` on the test set's queries."""
    labels = check_labels(labels)
    names = parse_measures(measures)
    max_drop = check_threshold("max-drop", max_drop, 0.0, 1e9)
    alpha = check_threshold("alpha", alpha, 0.0, 1.0)
    for run in (baseline, candidate):
        if run.test_set_id != test_set.id:
            raise ServiceError(f"run '{run.name}' is not a run of test set '{test_set.name}'")
    scored: dict[tuple[int, int], RunScores] = {}

    def scores(run: Run, k: int) -> RunScores:
        key = (run.id, k)
        if key not in scored:
            scored[key] = score_run(run, ScoreOptions(k=k).checked())
        return scored[key]

    checks, p_values = [], []
    for name in names:
        k = _split(name)[1]
        check, p = _check_one(name, scores(baseline, k), scores(candidate, k))
        checks.append(check)
        p_values.append(p)
    adjusted = holm(p_values)
    final = [
        replace(
            check,
            p_adjusted=p_adj,
            regressed=check.delta is not None
            and check.delta < -max_drop
            and p_adj is not None
            and p_adj < alpha,
        )
        for check, p_adj in zip(checks, adjusted, strict=True)
    ]
    return GateResult(
        test_set.name, baseline.name, candidate.name, max_drop, alpha, labels, tuple(final)
    )
