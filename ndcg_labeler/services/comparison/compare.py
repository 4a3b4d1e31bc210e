"""Comparing runs: mean NDCG@k with bootstrap intervals, paired tests and per-query deltas.

Undefined queries: a query whose NDCG@k is undefined (IDCG@k = 0) in any of the compared runs
is left out of all of them, so that every run is measured on the same queries and the tests
stay paired. With the default ideal (all judged chunks) IDCG does not depend on the run, so
these are exactly the queries each run's own mean leaves out. Queries missing from a run
score 0 there, as everywhere. Statistics: scoring.significance (scipy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ndcg_labeler.models import Run
from ndcg_labeler.scoring import MeanInterval
from ndcg_labeler.services import ServiceError, ppi
from ndcg_labeler.services.comparison import stats as stats_service
from ndcg_labeler.services.comparison.robustness import Robustness, pair_robustness
from ndcg_labeler.services.comparison.stats import (
    POWER,
    POWER_ALPHA,
    POWER_DIFFERENCE,
    Mode,
    PairTests,
    Power,
    counts,
    power_figures,
)
from ndcg_labeler.services.dashboard import MIN_INTERVAL_QUERIES, mean_band
from ndcg_labeler.services.live import Resolved, RunScores, ScoreOptions, score_run

# Up to this many per-query values (compared queries × runs) the statistics fragment computes
# intervals and tests in its own request; beyond, in the background. Each run adds an interval and
# a pair of tests (10,000 resamples each): at 1,000 queries two runs take ~0.15 s, six ~0.4 s,
# after scipy.stats' import (~0.6 s on a 2-core machine, paid by a worker's first comparison).
INLINE_MAX_VALUES = 2000
# Up to this many per-query values the page itself computes the sample size and what to label
# next; beyond, they come with the statistics fragment and a fragment of their own. The sample
# size needs scipy.stats (~0.8 s to import in a fresh worker, whatever the size) and ordering
# the pairs grows with the queries (~0.3 s at 1,000): a small comparison's page keeps them
# inline, as it always had, and one of 200 queries or more answers without them.
PAGE_INLINE_MAX_VALUES = 400
UNDEFINED_POLICY = (
    "Queries whose NDCG@k is undefined (IDCG@k is 0) in any compared run are left out of all "
    "of them, so every run is measured on the same queries; queries missing from a run score 0."
)


@dataclass(frozen=True)
class RunMean:
    """A run's mean NDCG@k over the compared queries, with its 95% bootstrap interval."""

    run: Run
    mean: float | None
    low: float | None
    high: float | None
    judged: float | None = None
    """Mean judged@k over the compared queries (the evidence behind the mean's band)."""
    band: str = "undefined"
    """mean_band of the mean: a band, or "not enough labels" on thin evidence."""
    mean_if_unjudged_top: float | None = None
    """The run's own mean if every unjudged chunk of its top k had the top grade."""
    mean_condensed: float | None = None
    """The run's mean on condensed lists (unjudged chunks removed before the cut at k)."""


@dataclass(frozen=True)
class PairResult:
    """Run B against run A on the compared queries (wins: B better)."""

    a: Run
    b: Run
    wins: int
    ties: int
    losses: int
    t_test_p: float | None
    randomization_p: float | None
    mean_delta: float | None
    robustness: Robustness | None = None
    """Whether the winner stays when every unjudged top-k chunk of either run is top grade."""


@dataclass(frozen=True)
class QueryDelta:
    """One query's NDCG@k in A and B and the difference B − A."""

    query_id: int
    qid: str
    text: str
    a: float
    b: float
    delta: float
    a_if_unjudged_top: float | None = None
    b_if_unjudged_top: float | None = None
    a_condensed: float | None = None
    b_condensed: float | None = None


@dataclass(frozen=True)
class Comparison:
    """Everything the comparison page and `flask run compare` show."""

    options: Resolved
    means: list[RunMean]
    compared: int
    left_out: int
    total: int
    pairs: list[PairResult]
    deltas: list[QueryDelta]
    stats_ready: bool = True
    # Under machine:, fill: and ppi: labels, beside the means: "labels", "audit" and, under
    # ppi:JUDGE, the PPI++ estimate of B − A ("ppi", "ppi_basis"); {} under human labels.
    labels_extra: dict[str, Any] = field(default_factory=dict)
    estimate: ppi.PPIFigures | None = None
    power: Power | None = None
    """The first pair's power figures, stored with the statistics (None: not stored yet)."""

    @property
    def large(self) -> bool:
        """More than PAGE_INLINE_MAX_VALUES per-query values (compared queries × runs): the
        page leaves the sample size and what to label next to their fragments."""
        return self.compared * len(self.means) > PAGE_INLINE_MAX_VALUES

    @property
    def first_pair(self) -> PairResult:
        """The first run against the second (the CLI's A and B)."""
        return self.pairs[0]

    @property
    def robust(self) -> bool:
        """The first pair's winner stays when the unjudged chunks get the top grade (never
        when no query was compared: there is no winner to stay)."""
        found = self.first_pair.robustness
        return not nothing_compared(found, self.compared) and (found is None or found.robust)

    def to_json(self) -> dict[str, Any]:
        """The exact JSON of `flask run compare --json` (A = first run, B = second)."""
        pair = self.first_pair
        out: dict[str, Any] = {
            "k": self.options.k,
            "runs": {
                m.run.name: {
                    "mean": m.mean,
                    "ci_low": m.low,
                    "ci_high": m.high,
                    "mean_if_unjudged_top": m.mean_if_unjudged_top,
                    "mean_condensed": m.mean_condensed,
                }
                for m in self.means
            },
            **robustness_json(pair.robustness, self.compared),
            "wins": pair.wins,
            "ties": pair.ties,
            "losses": pair.losses,
            "t_test_p": pair.t_test_p,
            "randomization_p": pair.randomization_p,
            "queries": [
                {
                    "qid": d.qid,
                    "a": d.a,
                    "b": d.b,
                    "delta": d.delta,
                    "a_if_unjudged_top": d.a_if_unjudged_top,
                    "b_if_unjudged_top": d.b_if_unjudged_top,
                    "a_condensed": d.a_condensed,
                    "b_condensed": d.b_condensed,
                }
                for d in self.deltas
            ],
            # Last, so the keys tools already read keep their order.
            "compared": self.compared,
            **self.labels_extra,
        }
        return out


def nothing_compared(found: Robustness | None, compared: int) -> bool:
    """No query was compared (NDCG@k undefined in a run on every query): no winner to test."""
    return compared == 0 or (found is not None and found.queries == 0)


def robustness_json(found: Robustness | None, compared: int) -> dict[str, Any]:
    """The flip test's JSON keys (B against A) over `compared` queries.

    With nothing compared the keys stay ("winner" a tie, nothing flips), but "robust" is
    false: there is no winner whose robustness could be claimed."""
    empty = nothing_compared(found, compared)
    if found is None:
        return {"robust": not empty, "flips_if_unjudged_top": False, "unjudged_pairs": 0}
    return {
        "robust": found.robust and not empty,
        "flips_if_unjudged_top": found.flips_if_unjudged_top,
        "unjudged_pairs": found.unjudged_pairs,
        "winner": found.winner,
        "winner_if_unjudged_top": found.winner_if_top,
        "mean_a_if_unjudged_top": found.mean_a_if_top,
        "mean_b_if_unjudged_top": found.mean_b_if_top,
    }


def _check(runs: Sequence[Run]) -> None:
    if len(runs) < 2:
        raise ServiceError("choose at least two runs to compare")
    if len({run.id for run in runs}) != len(runs):
        raise ServiceError("choose different runs to compare")
    if len({run.test_set_id for run in runs}) != 1:
        raise ServiceError("the runs must belong to the same test set")


def _pair(
    a: Run,
    b: Run,
    x: np.ndarray,
    y: np.ndarray,
    found: PairTests | None,
    robustness: Robustness | None = None,
) -> PairResult:
    wins, ties, losses = (found.wins, found.ties, found.losses) if found else counts(x, y)
    return PairResult(
        a=a,
        b=b,
        wins=wins,
        ties=ties,
        losses=losses,
        t_test_p=found.t_test_p if found else None,
        randomization_p=found.randomization_p if found else None,
        mean_delta=float((y - x).mean()) if x.size else None,
        robustness=robustness,
    )


def _mean(run: Run, values: np.ndarray, found: MeanInterval | None) -> RunMean:
    if not values.size:
        return RunMean(run, None, None, None)
    if found is None:  # not computed yet, or too few values for an honest interval
        return RunMean(run, float(values.mean()), None, None)
    return RunMean(run, found.mean, found.low, found.high)


def _mode(stats: bool, background: bool, values: int) -> Mode:
    if stats:
        return Mode.NOW
    if background:
        return Mode.NOW if values <= INLINE_MAX_VALUES else Mode.BACKGROUND
    return Mode.STORED


def _with_evidence(found: RunMean, result: RunScores, index: np.ndarray) -> RunMean:
    judged = result.judged_at_k[index]
    share = float(judged.mean()) if judged.size else None
    return replace(
        found,
        judged=share,
        band=mean_band(found.mean, int(judged.size), share),
        mean_if_unjudged_top=_mean_of(result.ndcg_if_unjudged_top[index]),
        mean_condensed=_mean_of(result.ndcg_condensed[index]),
    )


def _mean_of(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def compare_runs(
    runs: Sequence[Run],
    options: ScoreOptions,
    stats: bool = True,
    *,
    background: bool = False,
) -> Comparison:
    """Compare the runs on the queries defined in all of them; pairs are each run vs the first.

    stats: True computes the bootstrap intervals and p-values (stored by the exact scores);
    False only takes stored ones, unless `background`: then they are computed here up to
    INLINE_MAX_VALUES values (queries × runs), and beyond one background computation starts
    when none is stored.
    """
    _check(runs)
    results: list[RunScores] = [score_run(run, options) for run in runs]
    first = results[0]
    if any(r.qids != first.qids for r in results[1:]):  # pragma: no cover - same test set
        raise ServiceError("the runs do not score the same queries")
    defined = np.logical_and.reduce([~np.isnan(r.ndcg) for r in results])
    index = np.flatnonzero(defined)
    values = [r.ndcg[index] for r in results]
    mode = _mode(stats, background, int(index.size) * len(runs))
    key = f"{[run.id for run in runs]}|{first.options!r}"
    found = stats_service.figures(
        runs[0].test_set, key, values, mode, min_interval=MIN_INTERVAL_QUERIES
    )
    means = [
        _with_evidence(_mean(run, v, found.intervals[n] if found else None), r, index)
        for n, (run, v, r) in enumerate(zip(runs, values, results, strict=True))
    ]
    flips = pair_robustness(runs, results, index)
    pairs = [
        _pair(runs[0], run, values[0], v, found.pairs[n] if found else None, flips[n])
        for n, (run, v) in enumerate(zip(runs[1:], values[1:], strict=True))
    ]
    # B − A of the first two runs, as the CLI's JSON and the page's first pair.
    estimate = ppi.difference_estimate(runs[0], runs[1], options)
    return Comparison(
        labels_extra=ppi.labels_json(runs[0].test_set, options, estimate),
        estimate=estimate,
        options=first.options,
        means=means,
        compared=int(index.size),
        left_out=len(first.qids) - int(index.size),
        total=len(first.qids),
        pairs=pairs,
        deltas=_deltas(first, results[1], index),
        stats_ready=found is not None,
        power=found.power if found else None,
    )


def _deltas(first: RunScores, second: RunScores, index: np.ndarray) -> list[QueryDelta]:
    """Per compared query (`index` into the rows of `first`), B − A: the largest |B − A| first;
    beside each value, the run's own sensitivity figures."""
    a, b = first.ndcg[index], second.ndcg[index]
    delta = b - a
    # Then qid: the rows are in qid order, so the index breaks ties.
    order = index[np.lexsort((index, -np.abs(delta)))] if index.size else index
    position = {int(i): n for n, i in enumerate(index.tolist())}
    texts = first.texts()
    deltas = []
    a_top, b_top = first.ndcg_if_unjudged_top.tolist(), second.ndcg_if_unjudged_top.tolist()
    a_con, b_con = first.ndcg_condensed.tolist(), second.ndcg_condensed.tolist()
    for i in order.tolist():
        n = position[i]
        qpk = int(first.query_ids[i])
        deltas.append(
            QueryDelta(
                qpk,
                first.qids[i],
                texts.get(qpk, ""),
                float(a[n]),
                float(b[n]),
                float(delta[n]),
                a_top[i],
                b_top[i],
                a_con[i],
                b_con[i],
            )
        )
    return deltas


@dataclass(frozen=True)
class SampleSize:
    """Queries a two-sided paired t-test at `alpha` needs for POWER (None: no number does)."""

    compared: int
    observed_delta: float | None
    sd: float | None
    observed: int | None
    at_difference: int | None
    power: float = POWER
    alpha: float = POWER_ALPHA
    difference: float = POWER_DIFFERENCE


def sample_size(
    result: Comparison, alpha: float = POWER_ALPHA, *, inline: bool = True
) -> SampleSize | None:
    """Queries the paired t-test of B − A (the first pair) needs to detect a difference of
    the observed size, and of POWER_DIFFERENCE, with 80% power, if the spread of the
    per-query differences stays as observed (scoring.queries_for_power).

    Taken from the statistics when they are stored (at POWER_ALPHA); otherwise computed here,
    unless `inline` is False and the comparison is `large`: then None until the statistics
    (computed in their fragment or the background) bring them.
    """
    found = result.power if alpha == POWER_ALPHA else None
    if found is None:
        if not inline and result.large:
            return None
        found = power_figures(np.array([q.delta for q in result.deltas], dtype=np.float64), alpha)
    return SampleSize(
        compared=found.compared,
        observed_delta=found.observed_delta,
        sd=found.sd,
        observed=found.observed,
        at_difference=found.at_difference,
        alpha=alpha,
    )
