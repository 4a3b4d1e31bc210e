"""The release gate: does a candidate pass, fail or leave it open against a baseline, per measure?

For each measure asked for, both runs are scored on the test set's queries with the live
scoring engine under the label source asked for. As in the comparison page, a query whose value
is undefined in either run (e.g. NDCG with IDCG 0) is left out of both, so the two means cover
the same queries and the tests pair them; d is candidate − baseline per query. A measure
- fails when mean d < −max_drop and the two-sided paired t-test of d = 0 (scipy's ttest_rel),
  Holm-adjusted across the measures, has p < alpha;
- passes when it does not fail and the one-sided non-inferiority test of H0: mean d ≤ −max_drop
  has p < alpha (no adjustment: the run passes only when every measure does, an
  intersection-union test, which keeps level alpha);
- is inconclusive otherwise, with the queries that would decide it if mean and spread held.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ndcg_labeler.scoring import MEASURE_HELP as SCORING_MEASURE_HELP
from ndcg_labeler.scoring import (
    TIE_TOLERANCE,
    Measure,
    MeasureNameError,
    noninferiority_p,
    paired_t_test,
    queries_for_power,
    queries_to_clear,
)
from ndcg_labeler.scoring import (
    parse_measures as parse_names,
)
from ndcg_labeler.services import ServiceError, noun
from ndcg_labeler.services.live import ScoreOptions

if TYPE_CHECKING:
    from ndcg_labeler.services.ppi import AuditStatus

DEFAULT_MEASURES = ("ndcg_cut_10",)
DEFAULT_MAX_DROP = 0.01
# Item 6 of issue 29: queries for this power, at the observed difference and at this one.
POWER = 0.8
POWER_DIFFERENCE = 0.02
# Any name scoring.parse_measure reads, ir_measures' (nDCG@10, P(rel=2)@5) or trec_eval's.
MEASURE_HELP = SCORING_MEASURE_HELP
WORST = 5
# What the reports say in place of the worst queries when they are withheld.
WITHHELD = "this test set is judged blind: per-query figures are for admins"


@dataclass(frozen=True)
class QueryChange:
    """One query's value in both runs and the change (candidate − baseline)."""

    qid: str
    baseline: float
    candidate: float
    delta: float


@dataclass(frozen=True)
class SampleSize:
    """Paired queries a two-sided t-test at alpha needs for POWER (None: cannot tell)."""

    observed: int | None
    at_difference: int | None

    def to_json(self) -> dict[str, Any]:
        """The measure's "sample_size" object."""
        return {
            "power": POWER,
            "observed_delta": self.observed,
            "delta": POWER_DIFFERENCE,
            "delta_queries": self.at_difference,
        }


@dataclass(frozen=True)
class MeasureCheck:
    """One measure's verdict: means, delta, the three p-values, outcome and queries needed."""

    measure: str
    baseline: float | None
    candidate: float | None
    delta: float | None
    delta_sd: float | None
    queries: int
    p_value: float | None
    p_adjusted: float | None
    p_noninferiority: float | None
    outcome: str
    queries_needed: int | None
    note: str
    sample_size: SampleSize
    worst: tuple[QueryChange, ...]
    # Under labels=ppi:JUDGE: the PPI++ estimate of mean d, its interval, λ̂ and the audit.
    ppi: dict[str, Any] | None = None

    @property
    def regressed(self) -> bool:
        """True when the measure fails (today's regression rule)."""
        return self.outcome == "fail"

    def to_json(self) -> dict[str, Any]:
        """The measure's entry in the gate's JSON."""
        return {
            "measure": self.measure,
            "outcome": self.outcome,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "delta": self.delta,
            "delta_sd": self.delta_sd,
            "queries": self.queries,
            "paired_queries": self.queries,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "p_noninferiority": self.p_noninferiority,
            "regressed": self.regressed,
            "queries_needed": self.queries_needed,
            "note": self.note,
            "sample_size": self.sample_size.to_json(),
            **({"ppi": self.ppi} if self.ppi is not None else {}),
        }


@dataclass(frozen=True)
class GateResult:
    """The verdict over every measure: fail if one fails, pass if all pass, else inconclusive."""

    testset: str
    baseline: str
    candidate: str
    max_drop: float
    alpha: float
    labels: str
    measures: tuple[MeasureCheck, ...]
    # True when the reader may not see per-query figures (an annotator of a blind set).
    queries_withheld: bool = False
    # Under machine:, fill: and ppi: labels: the judge's audit status and failed answers.
    audit: AuditStatus | None = None
    # The ids of the test set, the baseline and the candidate (for the printed command).
    ids: tuple[int, int, int] | None = None

    def withholding_queries(self) -> GateResult:
        """The same verdict without any query's values (the reports' worst queries)."""
        measures = tuple(replace(m, worst=()) for m in self.measures)
        return replace(self, measures=measures, queries_withheld=True)

    @property
    def outcome(self) -> str:
        """pass, fail or inconclusive for the whole run."""
        outcomes = {m.outcome for m in self.measures}
        if "fail" in outcomes:
            return "fail"
        return "pass" if outcomes == {"pass"} else "inconclusive"

    @property
    def passed(self) -> bool:
        """True when every measure passed."""
        return self.outcome == "pass"

    @property
    def paired_queries(self) -> int:
        """The fewest paired queries any measure was decided on (each measure's own count
        is its `queries`: a query counts where both runs have a defined value)."""
        return min((m.queries for m in self.measures), default=0)

    @property
    def machine_labels(self) -> bool:
        """True when a machine judge's grades were scored (machine:, fill: or ppi:JUDGE)."""
        return self.labels != "human"

    def to_json(self) -> dict[str, Any]:
        """The JSON of `flask gate --json` and of the API."""
        return {
            "testset": self.testset,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "labels": self.labels,
            "machine_labels": self.machine_labels,
            "max_drop": self.max_drop,
            "alpha": self.alpha,
            "outcome": self.outcome,
            "passed": self.passed,
            "paired_queries": self.paired_queries,
            "measures": [m.to_json() for m in self.measures],
            **({"audit": self.audit.to_json()} if self.audit is not None else {}),
        }


def parse_measures(names: list[str] | tuple[str, ...] | None) -> list[Measure]:
    """The measures named, checked and without repeats (default: ndcg_cut_10); each keeps the
    name the user gave, which the verdict echoes."""
    try:
        return parse_names(names or (), DEFAULT_MEASURES)
    except MeasureNameError as exc:
        raise ServiceError(str(exc)) from None


def check_labels(labels: str) -> str:
    """The label source: human, machine:, fill: or ppi:JUDGE, naming a judge that exists."""
    return ScoreOptions(labels=(labels or "human").strip()).checked().judge_known().labels


def check_threshold(name: str, value: float, low: float, high: float) -> float:
    """A finite number within [low, high] (max-drop, alpha)."""
    if isinstance(value, bool) or not math.isfinite(value) or not low <= value <= high:
        raise ServiceError(f"{name} must be a number from {low:g} to {high:g}, not {value:g}")
    return float(value)


def check_one(
    measure: str,
    all_qids: list[str],
    values: tuple[np.ndarray, np.ndarray],
    max_drop: float,
    alpha: float,
) -> tuple[MeasureCheck, float | None]:
    """The measure's figures before Holm's adjustment (outcome still open) and its raw p;
    values are (baseline, candidate) per query of all_qids, NaN where undefined."""
    a, b = values
    keep = ~(np.isnan(a) | np.isnan(b))
    x, y = a[keep], b[keep]
    d = y - x
    qids = [q for q, kept in zip(all_qids, keep.tolist(), strict=True) if kept]
    p = _p_value(x, y)
    mean_a = float(x.mean()) if x.size else None
    mean_b = float(y.mean()) if y.size else None
    delta = None if mean_a is None or mean_b is None else mean_b - mean_a
    sd = float(d.std(ddof=1)) if d.size >= 2 else None
    if sd is not None and np.ptp(d) <= TIE_TOLERANCE:
        sd = 0.0  # equal differences: no spread, whatever the last bits say
    changes = [
        QueryChange(q, float(u), float(v), float(v - u))
        for q, u, v in zip(qids, x.tolist(), y.tolist(), strict=True)
    ]
    changes.sort(key=lambda c: (c.delta, c.qid))
    worst = tuple(c for c in changes[:WORST] if c.delta < -TIE_TOLERANCE)
    sizes = SampleSize(None, None)
    if delta is not None and sd is not None:
        sizes = SampleSize(
            queries_for_power(delta, sd, alpha, POWER),
            queries_for_power(POWER_DIFFERENCE, sd, alpha, POWER),
        )
    check = MeasureCheck(
        measure=measure,
        baseline=mean_a,
        candidate=mean_b,
        delta=delta,
        delta_sd=sd,
        queries=int(d.size),
        p_value=p,
        p_adjusted=None,
        p_noninferiority=noninferiority_p(d, max_drop),
        outcome="inconclusive",
        queries_needed=None,
        note="",
        sample_size=sizes,
        worst=worst,
    )
    return check, p


def _p_value(x: np.ndarray, y: np.ndarray) -> float | None:
    """Two-sided paired t-test p-value; 0 when every query moves by the same non-zero amount
    (no variance: t is infinite), None with fewer than two paired queries."""
    if x.size < 2:
        return None
    p = paired_t_test(x, y)
    return 0.0 if p is None else p


def decide(
    check: MeasureCheck, p_adjusted: float | None, max_drop: float, alpha: float
) -> MeasureCheck:
    """The measure's outcome, the queries that would decide an open one and why."""
    if check.queries < 2 or check.delta is None or check.delta_sd is None:
        return replace(
            check, p_adjusted=p_adjusted, note="fewer than 2 paired queries: no test can decide."
        )
    flat = (
        " Every query moved by the same amount (sd 0): decided by the mean alone."
        if (check.delta_sd == 0.0)
        else ""
    )
    if check.delta < -max_drop and p_adjusted is not None and p_adjusted < alpha:
        note = f"mean drop beyond {max_drop:g}, significant after Holm's adjustment."
        return replace(check, p_adjusted=p_adjusted, outcome="fail", note=note + flat)
    p_ni = check.p_noninferiority
    if p_ni is not None and p_ni < alpha:
        note = f"not worse by {max_drop:g} or more (non-inferiority p < {alpha:g})."
        return replace(check, p_adjusted=p_adjusted, outcome="pass", note=note + flat)
    needed = queries_to_clear(check.delta, check.delta_sd, max_drop, alpha)
    if needed is None and check.delta <= -max_drop:
        bound = f"−{max_drop:g}" if max_drop else "0"  # not "−0" for a gate that allows no drop
        note = f"more queries will not make it pass: mean d ≤ {bound} (they may make it fail)."
    elif needed is None:  # alpha 0, or a gap so thin that no realistic test set clears it
        note = f"more queries than any test set holds would be needed to pass at alpha {alpha:g}."
    else:
        note = (
            f"about {needed} paired {noun(needed, 'query', 'queries')} would decide it if the "
            "mean and spread of d "
            "stayed as observed."
        )
    return replace(check, p_adjusted=p_adjusted, queries_needed=needed, note=note + flat)
