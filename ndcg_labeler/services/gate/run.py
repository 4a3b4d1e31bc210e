"""The gate's one entry, `run_gate`: score both runs, then decide each measure by its rule.

Human, machine: and fill: labels go to the paired t rule (check.py); ppi:JUDGE goes to the
same three outcomes on the PPI++ estimate of the difference, with z in place of t
(ppi_rule.py). Either way Holm's adjustment runs across the measures.
"""

from __future__ import annotations

from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.scoring import holm
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
    split_measure,
)
from ndcg_labeler.services.gate.ppi_rule import ppi_check, ppi_decide
from ndcg_labeler.services.live import RunScores, ScoreOptions, score_run


def run_gate(
    test_set: TestSet,
    baseline: Run,
    candidate: Run,
    measures: list[str] | tuple[str, ...] | None = None,
    max_drop: float = DEFAULT_MAX_DROP,
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
    scored: dict[tuple[int, int, str], RunScores] = {}

    def scores(run: Run, k: int, source: str = labels) -> RunScores:
        key = (run.id, k, source)
        if key not in scored:
            scored[key] = score_run(run, ScoreOptions(k=k, labels=source).checked())
        return scored[key]

    checks: list[MeasureCheck] = []
    p_values: list[float | None] = []
    if ppi.is_ppi(labels):
        judge = labels.partition(":")[2].strip()
        machine = f"machine:{judge}"
        first = scores(baseline, split_measure(names[0])[1], "human")
        mask, status = ppi.audited_queries(test_set, judge, first.qids)
        for name in names:
            k = split_measure(name)[1]
            human_runs = (scores(baseline, k, "human"), scores(candidate, k, "human"))
            machine_runs = (scores(baseline, k, machine), scores(candidate, k, machine))
            check, p = ppi_check(name, human_runs, machine_runs, mask, status, max_drop)
            checks.append(check)
            p_values.append(p)
        rule = ppi_decide
    else:
        for name in names:
            k = split_measure(name)[1]
            check, p = check_one(name, scores(baseline, k), scores(candidate, k), max_drop, alpha)
            checks.append(check)
            p_values.append(p)
        rule = decide
    final = [
        rule(check, p_adj, max_drop, alpha)
        for check, p_adj in zip(checks, holm(p_values), strict=True)
    ]
    return GateResult(
        test_set.name, baseline.name, candidate.name, max_drop, alpha, labels, tuple(final)
    )
