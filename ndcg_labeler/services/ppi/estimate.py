"""The ppi:JUDGE label source: PPI++ estimates of the human mean NDCG@k of a run or of B − A.

Estimand: the mean over all of the test set's queries of NDCG@k under human labels, a query
without any relevant judged chunk (NDCG undefined) counting 0. Per query, Y is NDCG@k under
human labels and Ŷ under machine:JUDGE labels, both with that convention; the labeled set is
the judge's audit sample's audited queries (audit_samples.audit_state), the unlabeled set every
other query. scoring.ppi_mean does the arithmetic; below MIN_AUDITED audited queries, or when
the audited queries leave the interval no width while the judge's values vary, the interval is
withheld ("audit more queries"). A difference of two runs is the same on per-query differences.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ndcg_labeler import scoring
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import audit_samples, judges, live
from ndcg_labeler.services.ppi.answers import failed_answers

ALPHA = 0.05
# Label sources naming a judge (KIND:JUDGE).
_JUDGE_KINDS = ("machine", "fill", "ppi")


@dataclass(frozen=True)
class AuditStatus:
    """How much of the test set people audited for a judge: k of N queries, S sampled; and
    how many of the judge's answered pairs on the set have no readable answer."""

    judge: str
    audited: int
    queries: int
    sampled: int
    failed: int = 0  # pairs whose every answer failed or was unparsed (scored as unjudged)
    answers: int = 0  # pairs the judge answered
    fill: bool = False  # under fill:JUDGE (failed then counts only pairs nobody graded)

    @property
    def text(self) -> str:
        """ "k of N queries audited", as every machine mean shows it."""
        return f"{self.audited} of {self.queries} queries audited"

    @property
    def failed_note(self) -> str | None:
        """What the failed answers did to the figures; None when none failed."""
        if not self.failed:
            return None
        where = " where people gave no grade" if self.fill else ""
        return (
            f"{self.failed} of {self.answers} judge answers failed or were unparsed{where}: "
            "counted as unjudged (not relevant)"
        )

    def to_json(self) -> dict[str, Any]:
        """The status as JSON: the counts and the sentences."""
        return {
            "judge": self.judge,
            "audited": self.audited,
            "queries": self.queries,
            "sampled": self.sampled,
            "status": self.text,
            "judge_failed": self.failed,
            "judge_answers": self.answers,
            "judge_failed_note": self.failed_note,
        }


@dataclass(frozen=True)
class PPIFigures:
    """A PPI++ estimate (None below one audited query) with what it rests on."""

    audit: AuditStatus
    found: scoring.PPIEstimate | None
    reason: str | None
    machine_mean: float | None  # mean Ŷ over every query (undefined counts 0)
    human_audited_mean: float | None  # mean Y over the audited queries (undefined counts 0)
    difference: bool = False  # of B − A rather than of one run

    @property
    def has_interval(self) -> bool:
        """True when the interval is given (at least MIN_AUDITED audited queries)."""
        return self.found is not None and self.reason is None

    def to_json(self) -> dict[str, Any]:
        """The "ppi" object: estimate, ci_low, ci_high, n_audited, n_unaudited, lambda, reason."""
        found = self.found
        shown = self.has_interval
        return {
            "estimate": None if found is None else found.estimate,
            "ci_low": found.ci_low if shown and found else None,
            "ci_high": found.ci_high if shown and found else None,
            "n_audited": self.audit.audited,
            "n_unaudited": self.audit.queries - self.audit.audited,
            "lambda": None if found is None else found.lam,
            "reason": self.reason,
        }

    def basis_json(self) -> dict[str, Any]:
        """The "ppi_basis" object: the means beside the estimate, its se and the audit status."""
        return {
            "judge": self.audit.judge,
            "confidence": 1 - ALPHA,
            "se": None if self.found is None else self.found.se,
            "machine_mean": self.machine_mean,
            "human_audited_mean": self.human_audited_mean,
            "audit": self.audit.to_json(),
        }


def is_ppi(labels: str) -> bool:
    """True for a ppi:JUDGE label source."""
    return labels.startswith("ppi:")


def _judge_name(labels: str) -> str | None:
    """The judge a machine:, fill: or ppi: label source names; None for human."""
    kind, _, name = labels.partition(":")
    return name.strip() if kind in _JUDGE_KINDS else None


def audited_queries(
    test_set: TestSet, judge_name: str, qids: list[str]
) -> tuple[np.ndarray, AuditStatus]:
    """(mask over `qids` of the audited queries, the audit status) of the judge's sample."""
    judge = judges.require_judge(judge_name)
    state = audit_samples.audit_state(test_set, judge)
    audited = set(state.audited)
    mask = np.fromiter((qid in audited for qid in qids), dtype=bool, count=len(qids))
    failed, answers = failed_answers(test_set.id, judge.id)
    status = AuditStatus(
        judge.name, int(mask.sum()), len(qids), len(state.queries), failed, answers
    )
    return mask, status


def audit_status(test_set: TestSet, labels: str) -> AuditStatus | None:
    """The audit status beside a machine:, fill: or ppi: mean; None for human labels."""
    name = _judge_name(labels)
    if name is None:
        return None
    judge = judges.require_judge(name)
    state = audit_samples.audit_state(test_set, judge)
    fill = labels.startswith("fill:")
    failed, answers = failed_answers(test_set.id, judge.id, fill)
    return AuditStatus(
        judge.name,
        len(state.audited),
        state.query_count,
        len(state.queries),
        failed,
        answers,
        fill,
    )


def _per_query(run: Run, options: live.ScoreOptions, labels: str) -> tuple[np.ndarray, list[str]]:
    """NDCG@k of every query of the set under `labels`, undefined counting 0 (the estimand's)."""
    scores = live.score_run(run, replace(options, labels=labels).checked())
    return np.nan_to_num(scores.ndcg.astype(np.float64), nan=0.0), scores.qids


def estimate_from(
    y: np.ndarray, yhat: np.ndarray, mask: np.ndarray, status: AuditStatus, difference: bool = False
) -> PPIFigures:
    """scoring.ppi_mean with the audited queries (`mask`) labeled and the others not.

    y and yhat hold one value per query of the set (undefined ones already 0); the interval
    is withheld below MIN_AUDITED audited queries, and when the audited queries leave it no
    width while the judge's values vary (_flat_audit); the estimate is withheld below one.
    """
    found = None
    if status.audited:
        found = scoring.ppi_mean(y[mask], yhat[mask], yhat[~mask], alpha=ALPHA)
    reason = None
    if status.audited < scoring.MIN_AUDITED:
        reason = (
            f"audit more queries: {status.text}; an interval needs at least "
            f"{scoring.MIN_AUDITED} (flask judges audit)"
        )
    elif found is not None and _flat_audit(found, yhat):
        reason = (
            f"audit more queries: {status.text}, with no spread to size an interval on, "
            "while the judge's values vary over the set; an interval of no width would "
            "claim the others score as the audited do (flask judges audit)"
        )
    return PPIFigures(
        audit=status,
        found=found,
        reason=reason,
        machine_mean=float(yhat.mean()) if yhat.size else None,
        human_audited_mean=float(y[mask].mean()) if status.audited else None,
        difference=difference,
    )


def _flat_audit(found: scoring.PPIEstimate, yhat: np.ndarray) -> bool:
    """True when the interval has no width although queries are left unaudited and the
    judge's values vary: the audited queries (all alike) then say nothing of how far the
    others stray. With no spread anywhere (two identical runs) the zero width stands."""
    return (
        found.n_unaudited > 0
        and found.se_set <= scoring.TIE_TOLERANCE
        and float(np.ptp(yhat)) > scoring.TIE_TOLERANCE
    )


def run_estimate(run: Run, options: live.ScoreOptions) -> PPIFigures | None:
    """The PPI++ estimate of the run's human mean NDCG@k under ppi:JUDGE; None otherwise."""
    if not is_ppi(options.labels):
        return None
    judge = _judge_name(options.labels) or ""
    y, qids = _per_query(run, options, "human")
    yhat, _ = _per_query(run, options, f"machine:{judge}")
    mask, status = audited_queries(run.test_set, judge, qids)
    return estimate_from(y, yhat, mask, status, difference=False)


def difference_estimate(
    baseline: Run, candidate: Run, options: live.ScoreOptions
) -> PPIFigures | None:
    """The PPI++ estimate of mean human NDCG@k of candidate − baseline under ppi:JUDGE."""
    if not is_ppi(options.labels):
        return None
    judge = _judge_name(options.labels) or ""
    y_a, qids = _per_query(baseline, options, "human")
    y_b, _ = _per_query(candidate, options, "human")
    yhat_a, _ = _per_query(baseline, options, f"machine:{judge}")
    yhat_b, _ = _per_query(candidate, options, f"machine:{judge}")
    mask, status = audited_queries(baseline.test_set, judge, qids)
    return estimate_from(y_b - y_a, yhat_b - yhat_a, mask, status, difference=True)
