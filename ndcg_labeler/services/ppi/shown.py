"""What score views add under machine:, fill: and ppi: labels: the audit status and the estimate.

A machine mean is never shown without how much of the test set people audited for that judge
and how many of the judge's pairs have only failed or unparsed answers (the "audit" object's
judge_failed, judge_answers and judge_failed_note);
under ppi:JUDGE the "ppi" object (estimate, ci_low, ci_high, n_audited, n_unaudited, lambda,
reason) and its "ppi_basis" (the machine-only mean, the human-only mean of the audited queries,
se and the audit status) come beside the usual figures.
"""

from __future__ import annotations

from typing import Any

from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import live
from ndcg_labeler.services.ppi.estimate import PPIFigures, audit_status, run_estimate


def labels_json(
    test_set: TestSet, options: live.ScoreOptions, figures: PPIFigures | None
) -> dict[str, Any]:
    """{} under human labels; else "labels" and "audit", plus "ppi" and "ppi_basis" under ppi:."""
    status = audit_status(test_set, options.labels)
    if status is None:
        return {}
    out: dict[str, Any] = {"labels": options.labels, "audit": status.to_json()}
    if figures is not None:
        out["ppi"] = figures.to_json()
        out["ppi_basis"] = figures.basis_json()
    return out


def score_json(run: Run, options: live.ScoreOptions) -> dict[str, Any]:
    """The JSON of `flask run score --json` and of the API's scores, with labels_json beside."""
    out = live.score_run(run, options).to_json()
    out.update(labels_json(run.test_set, options, run_estimate(run, options)))
    return out


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def describe(figures: PPIFigures) -> str:
    """One line for the command line: the estimate, its interval or why none, and its basis."""
    found = figures.found
    what = "B − A of the human mean" if figures.difference else "the human mean"
    head = f"PPI++ estimate of {what} over all queries: {_num(found and found.estimate)}"
    if figures.has_interval and found is not None:
        head += f", 95% t interval [{found.ci_low:.4f}, {found.ci_high:.4f}], λ {found.lam:.4f}"
    else:
        head += f" ({figures.reason})"
    return (
        f"{head}; machine-only mean {_num(figures.machine_mean)}, human-only mean of the "
        f"audited queries {_num(figures.human_audited_mean)} ({figures.audit.text})"
    )
