"""The gate's one entry, `run_gate`: score both runs, then decide each measure by its rule.

Human, machine: and fill: labels go to the paired t rule (check.py); ppi:JUDGE goes to the
same three outcomes on the PPI++ estimate of the difference, with z in place of t
(ppi_rule.py). Either way Holm's adjustment runs across the measures.
"""

from __future__ import annotations

from dataclasses import replace

from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.scoring import Measure, holm
from ndcg_labeler.services import ServiceError, ppi
from ndcg_labeler.services.gate.check import (
    DEFAULT_MAX_DROP,
    GateResult,
    MeasureCheck,
    check_labels,
    check_one,
    check_threshold,
    decide,
    parse_measures,
)
from ndcg_labeler.services.gate.ppi_rule import ppi_check, ppi_decide
from ndcg_labeler.services.live import MeasureValues, ScoreOptions, named_measures


def run_gate(
    test_set: TestSet,
    baseline: Run,
    candidate: Run,
    measures: list[str] | tuple[str, ...] | None = None,
    max_drop: float = DEFAULT_MAX_DROP,
    alpha: float = 0.05,
    labels: str = "human",
    max_drop_name: str = "max-drop",
    alpha_name: str = "alpha",
) -> GateResult:
    """Check every measure of `candidate` against `baseline` on the test set's queries;
    `max_drop_name` and `alpha_name` are how the caller spells them in an error (--max-drop,
    'max_drop')."""
    labels = check_labels(labels)
    names = parse_measures(measures)
    max_drop = check_threshold(max_drop_name, max_drop, 0.0, 1e9)
    alpha = check_threshold(alpha_name, alpha, 0.0, 1.0)
    for run in (baseline, candidate):
        if run.test_set_id != test_set.id:
            raise ServiceError(f"run '{run.name}' is not a run of test set '{test_set.name}'")
    scored: dict[tuple[int, Measure, str], MeasureValues] = {}

    def scores(run: Run, measure: Measure, source: str = labels) -> MeasureValues:
        key = (run.id, replace(measure, name=""), source)
        if key not in scored:
            scored[key] = named_measures(run, [measure], ScoreOptions(labels=source).checked())[0]
        return scored[key]

    checks: list[MeasureCheck] = []
    p_values: list[float | None] = []
    # Beside machine grades: the judge's audit and how many of its answers failed.
    audit = ppi.audit_status(test_set, labels)
    if ppi.is_ppi(labels):
        judge = labels.partition(":")[2].strip()
        machine = f"machine:{judge}"
        first = scores(baseline, names[0], "human")
        mask, status = ppi.audited_queries(test_set, judge, first.qids)
        audit = status
        for measure in names:
            human_runs = (scores(baseline, measure, "human"), scores(candidate, measure, "human"))
            machine_runs = (scores(baseline, measure, machine), scores(candidate, measure, machine))
            check, p = ppi_check(
                measure.shown,
                first.qids,
                (human_runs[0].values, human_runs[1].values),
                (machine_runs[0].values, machine_runs[1].values),
                mask,
                status,
                max_drop,
            )
            checks.append(check)
            p_values.append(p)
        rule = ppi_decide
    else:
        for measure in names:
            pair = (scores(baseline, measure).values, scores(candidate, measure).values)
            qids = scores(baseline, measure).qids
            check, p = check_one(measure.shown, qids, pair, max_drop, alpha)
            checks.append(check)
            p_values.append(p)
        rule = decide
    final = [
        rule(check, p_adj, max_drop, alpha)
        for check, p_adj in zip(checks, _holm_by_measure(names, p_values), strict=True)
    ]
    return GateResult(
        test_set.name,
        baseline.name,
        candidate.name,
        max_drop,
        alpha,
        labels,
        tuple(final),
        audit=audit,
        ids=(test_set.id, baseline.id, candidate.id),
    )


def _holm_by_measure(names: list[Measure], p_values: list[float | None]) -> list[float | None]:
    """Holm-adjusted p-values with one hypothesis per distinct measure: two names of one
    measure (P_1 and P@1) are one test, and counting it twice would double its p."""
    keys = [replace(measure, name="") for measure in names]
    first: dict[Measure, float | None] = {}
    for key, p in zip(keys, p_values, strict=True):
        first.setdefault(key, p)
    adjusted = dict(zip(first, holm(list(first.values())), strict=True))
    return [adjusted[key] for key in keys]
