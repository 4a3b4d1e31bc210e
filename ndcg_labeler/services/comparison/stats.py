"""Bootstrap intervals and paired tests for run comparisons, stored by the exact scores.

At 7,000 queries the statistics of six runs take seconds (10,000 resamples each), so they are
stored in the database (services._figures_cache) under the compared runs and options, with a
digest of the per-query values they were computed from (and the settings) as their version:
every server process and the CLI share them, the same scores never pay twice, and a grade
change gives new values and so a new version (never stale). A large comparison's statistics are
computed by one background thread while the page asks again.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from ndcg_labeler.models import TestSet
from ndcg_labeler.scoring import (
    TIE_TOLERANCE,
    MeanInterval,
    bootstrap_ci,
    compare_runs,
    queries_for_power,
)
from ndcg_labeler.services._figures_cache import Computing, cached, stored

CONFIDENCE = 0.95
N_RESAMPLES = 10_000
SEED = 0
_KIND = "compare_stats"
# Item 6 of issue 29, as the gate's report states it: queries for this power at alpha, at the
# observed difference and at this one.
POWER = 0.8
POWER_ALPHA = 0.05
POWER_DIFFERENCE = 0.02
# Part of the stored figures' version: rows stored before they held the power figures are
# computed again (once) rather than shown without them.
_LAYOUT = "power-1"


class Mode(Enum):
    """How to get a comparison's statistics."""

    NOW = "now"  # computed here unless stored (exact, may take seconds)
    STORED = "stored"  # only if already stored for these exact scores
    BACKGROUND = "background"  # stored, or started in the background (None until it is done)


@dataclass(frozen=True)
class PairTests:
    """Wins, ties, losses and both two-sided p-values of one run against the first."""

    wins: int
    ties: int
    losses: int
    t_test_p: float | None
    randomization_p: float | None


@dataclass(frozen=True)
class Power:
    """Queries a two-sided paired t-test at `alpha` needs for POWER, from the per-query
    differences B − A of the first pair (None: no number does, or fewer than two queries)."""

    compared: int
    observed_delta: float | None
    sd: float | None
    observed: int | None
    at_difference: int | None


@dataclass(frozen=True)
class Figures:
    """Per run its mean with a 95% interval (None: too few values); per pair its tests; the
    first pair's power figures (computed with them: both need scipy.stats, which a fresh
    worker takes a second to import, so a page reads them stored instead)."""

    intervals: list[MeanInterval | None]
    pairs: list[PairTests]
    power: Power | None = None


def largest_first(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Positions of the differences b − a, the largest |b − a| first, ties in row order (the
    comparison's per-query list, whose order the power figures' sums follow)."""
    delta = b - a
    return np.lexsort((np.arange(delta.size), -np.abs(delta)))


def power_figures(d: np.ndarray, alpha: float = POWER_ALPHA) -> Power:
    """The power figures of the differences `d` in the order given (scoring.queries_for_power,
    at the observed difference and at POWER_DIFFERENCE)."""
    if d.size < 2:
        return Power(int(d.size), float(d.mean()) if d.size else None, None, None, None)
    sd = float(d.std(ddof=1))
    if np.ptp(d) <= TIE_TOLERANCE:
        sd = 0.0  # equal differences: no spread, whatever the last bits say (as the gate)
    delta = float(d.mean())
    return Power(
        compared=int(d.size),
        observed_delta=delta,
        sd=sd,
        observed=queries_for_power(delta, sd, alpha, POWER),
        at_difference=queries_for_power(POWER_DIFFERENCE, sd, alpha, POWER),
    )


def _version(values: Sequence[np.ndarray], min_interval: int) -> str:
    settings = f"{CONFIDENCE}:{N_RESAMPLES}:{SEED}:{min_interval}:{_LAYOUT}"
    digest = hashlib.sha256(settings.encode())
    for v in values:
        digest.update(np.ascontiguousarray(v, dtype=np.float64).tobytes())
        digest.update(b"|")
    return digest.hexdigest()


def _compute(values: Sequence[np.ndarray], min_interval: int) -> dict[str, Any]:
    """JSON-ready figures: {"ci": [[mean, low, high] | None], "pairs": [[w, t, l, tp, rp]],
    "power": [compared, observed_delta, sd, observed, at_difference]}."""
    intervals = []
    for v in values:
        found = (
            bootstrap_ci(v.tolist(), CONFIDENCE, N_RESAMPLES, SEED)
            if v.size >= min_interval
            else None
        )
        intervals.append(list(found) if found is not None else None)
    pairs = []
    for v in values[1:]:
        c = compare_runs(values[0].tolist(), v.tolist(), n_resamples=N_RESAMPLES, seed=SEED)
        pairs.append([c.wins, c.ties, c.losses, c.t_test_p, c.randomization_p])
    a, b = values[0], values[1]
    power = power_figures((b - a)[largest_first(a, b)])
    return {"ci": intervals, "pairs": pairs, "power": list(dataclasses.astuple(power))}


def _figures(data: dict[str, Any]) -> Figures:
    power = data.get("power")
    return Figures(
        intervals=[MeanInterval(*ci) if ci is not None else None for ci in data["ci"]],
        pairs=[PairTests(*pair) for pair in data["pairs"]],
        power=Power(*power) if power is not None else None,
    )


def figures(
    test_set: TestSet,
    key: str,
    values: Sequence[np.ndarray],
    mode: Mode,
    *,
    min_interval: int,
) -> Figures | None:
    """The statistics of `values` (per run, the compared queries' scores; pairs: each run
    against the first). `key` names the comparison (runs and options); intervals are computed
    only for runs with at least `min_interval` values. None when not (yet) available."""
    arrays = [np.asarray(v, dtype=np.float64) for v in values]
    version = _version(arrays, min_interval)
    options = hashlib.sha1(key.encode()).hexdigest()
    if mode is Mode.STORED:
        data = stored(test_set.id, _KIND, options, version)
        return _figures(data) if data is not None else None
    background = mode is Mode.BACKGROUND
    try:
        found = cached(
            test_set,
            _KIND,
            options,
            lambda _: version,
            lambda _: _compute(arrays, min_interval),
            background=background,
            inline=not background,
            large=background,
        )
    except Computing:
        return None
    return None if found.updating else _figures(found.value)


def counts(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int]:
    """(wins, ties, losses) of b against a with the tolerance compare_runs uses."""
    deltas = b - a
    wins = int(np.count_nonzero(deltas > TIE_TOLERANCE))
    losses = int(np.count_nonzero(deltas < -TIE_TOLERANCE))
    return wins, int(deltas.size) - wins - losses, losses
