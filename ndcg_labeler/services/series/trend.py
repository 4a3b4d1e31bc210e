"""A series over time: each run's mean NDCG@k with its 95% t interval and judged@k, and
whether it changed significantly against the run before it (the paired t-test of the
comparison page and the gate, on the queries defined in both runs, at alpha 0.05)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ndcg_labeler.models import Run, TestSet, iso_utc
from ndcg_labeler.scoring import TInterval, paired_t_test
from ndcg_labeler.services.live import RunScores, ScoreOptions, score_run
from ndcg_labeler.services.series.catalog import series_runs

ALPHA = 0.05


@dataclass(frozen=True)
class TrendPoint:
    """One run of a series, scored, and its change against the previous run."""

    run: Run
    mean: float | None
    n: int
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    judged: float | None
    previous: Run | None
    delta: float | None
    p_value: float | None
    paired_queries: int
    ci: TInterval | None = None

    @property
    def significant(self) -> bool:
        """True when the change against the previous run has p < ALPHA."""
        return self.p_value is not None and self.p_value < ALPHA

    @property
    def direction(self) -> str:
        """up, down or "" (not significant, or the first run)."""
        if not self.significant or self.delta is None:
            return ""
        return "up" if self.delta > 0 else "down"

    def to_json(self) -> dict[str, Any]:
        """One point of `flask run series SET NAME --json`."""
        return {
            "run": self.run.name,
            "run_id": self.run.id,
            "uploaded_at": iso_utc(self.run.uploaded_at),
            "mean_ndcg": self.mean,
            "n": self.n,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "ci_method": self.ci_method,
            "mean_judged": self.judged,
            "previous": self.previous.name if self.previous else None,
            "delta": self.delta,
            "p_value": self.p_value,
            "paired_queries": self.paired_queries,
            "significant": self.significant,
        }


@dataclass(frozen=True)
class Trend:
    """A series' runs in upload order, scored under one set of options."""

    name: str
    k: int
    points: list[TrendPoint]
    left_out: list[Run] = field(default_factory=list)
    """Runs archived shallower than k: they cannot score at k (see services/runs/retention)."""

    def to_json(self) -> dict[str, Any]:
        """`flask run series SET NAME --json`."""
        return {
            "series": self.name,
            "k": self.k,
            "alpha": ALPHA,
            "test": "paired t-test against the previous run",
            "points": [p.to_json() for p in self.points],
            "left_out": [
                {"run": run.name, "run_id": run.id, "kept_depth": run.kept_depth}
                for run in self.left_out
            ],
        }


def _point(run: Run, scores: RunScores, previous: tuple[Run, RunScores] | None) -> TrendPoint:
    interval = scores.interval
    delta = p_value = None
    paired = 0
    if previous is not None:
        before = previous[1].ndcg
        both = ~np.isnan(before) & ~np.isnan(scores.ndcg)
        paired = int(np.count_nonzero(both))
        if paired:
            a, b = before[both], scores.ndcg[both]
            delta = float((b - a).mean())
            p_value = paired_t_test(a.tolist(), b.tolist())
    return TrendPoint(
        run=run,
        mean=scores.mean_ndcg,
        n=interval.n,
        ci_low=interval.low,
        ci_high=interval.high,
        ci_method=interval.method,
        judged=scores.mean_judged_at_k,
        previous=previous[0] if previous else None,
        delta=delta,
        p_value=p_value,
        paired_queries=paired,
        ci=interval,
    )


def trend(test_set: TestSet, name: str, options: ScoreOptions | None = None) -> Trend:
    """The series' trend: every run scored (stored scores make this cheap), oldest first;
    runs archived shallower than k are left out, as the overview leaves them out."""
    options = (options or ScoreOptions()).checked()
    points: list[TrendPoint] = []
    left_out: list[Run] = []
    previous: tuple[Run, RunScores] | None = None
    for run in series_runs(test_set, name):
        if run.kept_depth is not None and options.k > run.kept_depth:
            left_out.append(run)  # score_run would refuse it, and with it the whole series
            continue
        scores = score_run(run, options)
        points.append(_point(run, scores, previous))
        previous = (run, scores)
    return Trend(name, options.k, points, left_out)
