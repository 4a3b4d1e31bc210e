"""The gate's rule under labels=ppi:JUDGE: the three outcomes on a PPI++ estimate, z for t.

Per query, d = candidate − baseline under human labels (Y) and under machine:JUDGE labels (Ŷ),
an undefined value counting 0 in its run (the estimand is the mean over all of the set's
queries). The audited queries of the judge's sample are labeled, the others not; θ̂ and its
se come from scoring.ppi_mean (services/ppi). A measure
- fails when θ̂ < −max_drop and the two-sided z-test of θ = 0, p = 2·Φ(−|θ̂|/se),
  Holm-adjusted across the measures, has p < alpha;
- passes when it does not fail and the one-sided z-test of H0: θ ≤ −max_drop,
  p = Φ(−(θ̂ + max_drop)/se), has p < alpha;
- is inconclusive otherwise, and always below MIN_AUDITED audited queries ("audit more
  queries"): the interval, and so any test on it, is withheld.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ndcg_labeler import scoring
from ndcg_labeler.services import ppi
from ndcg_labeler.services.gate.check import (
    WORST,
    MeasureCheck,
    QueryChange,
    SampleSize,
)


def _zeroed(values: np.ndarray) -> np.ndarray:
    """The measure per query, an undefined value counting 0."""
    return np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0)


def ppi_check(
    measure: str,
    qids: list[str],
    human: tuple[np.ndarray, np.ndarray],
    machine: tuple[np.ndarray, np.ndarray],
    mask: np.ndarray,
    status: ppi.AuditStatus,
    max_drop: float,
) -> tuple[MeasureCheck, float | None]:
    """The measure's PPI figures before Holm's adjustment (outcome still open) and its raw p.

    human and machine are (baseline, candidate) per query of qids under human and
    machine:JUDGE labels.
    """
    y_a, y_b = (_zeroed(r) for r in human)
    yhat_a, yhat_b = (_zeroed(r) for r in machine)
    base = ppi.estimate_from(y_a, yhat_a, mask, status)
    cand = ppi.estimate_from(y_b, yhat_b, mask, status)
    diff = ppi.estimate_from(y_b - y_a, yhat_b - yhat_a, mask, status, difference=True)
    tested = diff.found if diff.has_interval else None
    p = None if tested is None else scoring.ppi_p_value(tested, 0.0, "two-sided")
    p_ni = None if tested is None else scoring.ppi_p_value(tested, -max_drop, "larger")
    changes = [
        QueryChange(qid, float(u), float(v), float(v - u))
        for qid, u, v, audited in zip(qids, y_a.tolist(), y_b.tolist(), mask.tolist(), strict=True)
        if audited
    ]
    changes.sort(key=lambda c: (c.delta, c.qid))
    check = MeasureCheck(
        measure=measure,
        baseline=None if base.found is None else base.found.estimate,
        candidate=None if cand.found is None else cand.found.estimate,
        delta=None if diff.found is None else diff.found.estimate,
        delta_sd=None,
        queries=int(mask.size),
        p_value=p,
        p_adjusted=None,
        p_noninferiority=p_ni,
        outcome="inconclusive",
        queries_needed=None,
        note="",
        sample_size=SampleSize(None, None),
        worst=tuple(c for c in changes[:WORST] if c.delta < -scoring.TIE_TOLERANCE),
        ppi={**diff.to_json(), **diff.basis_json()},
    )
    return check, p


def ppi_decide(
    check: MeasureCheck, p_adjusted: float | None, max_drop: float, alpha: float
) -> MeasureCheck:
    """The measure's outcome under the PPI rule and why."""
    assert check.ppi is not None
    reason = check.ppi["reason"]
    if reason is not None or check.delta is None:
        note = f"{reason or 'no audited query'}: no interval, so no test can decide."
        return replace(check, p_adjusted=p_adjusted, note=note)
    if check.delta < -max_drop and p_adjusted is not None and p_adjusted < alpha:
        note = (
            f"PPI estimate of the drop beyond {max_drop:g}, significant (z-test) after "
            "Holm's adjustment."
        )
        outcome = "fail"
    elif check.p_noninferiority is not None and check.p_noninferiority < alpha:
        note = f"not worse by {max_drop:g} or more (PPI non-inferiority z-test p < {alpha:g})."
        outcome = "pass"
    else:
        note = (
            "the PPI interval of the difference leaves it open: audit more queries "
            f"({check.ppi['audit']['status']}) to narrow it."
        )
        outcome = "inconclusive"
    return replace(check, p_adjusted=p_adjusted, note=note, outcome=outcome)
