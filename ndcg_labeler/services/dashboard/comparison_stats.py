"""Bootstrap intervals and paired tests for run comparisons, cached by the exact scores.

At 7,000 queries 10,000 bootstrap resamples take seconds, so each result is kept per process,
keyed by a digest of the per-query values it was computed from (and the settings): the same
scores never pay twice, and any grade change gives new values and so a new key (never stale).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from flask import current_app

from ndcg_labeler.scoring.significance import (
    TIE_TOLERANCE,
    Comparison,
    MeanInterval,
    bootstrap_ci,
    compare_runs,
)

CONFIDENCE = 0.95
N_RESAMPLES = 10_000
SEED = 0
CACHE_SIZE = 128
_EXTENSION = "ndcg_compare_stats"
T = TypeVar("T")


class _Cache:
    """A small LRU guarded by a lock (one app may serve many threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()

    def get(self, key: tuple[Any, ...]) -> Any:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        return None

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        with self.lock:
            self.items[key] = value
            while len(self.items) > CACHE_SIZE:
                self.items.popitem(last=False)


def _cache() -> _Cache:
    found = current_app.extensions.get(_EXTENSION)
    if found is None:
        found = current_app.extensions.setdefault(_EXTENSION, _Cache())
    return found


def _digest(values: np.ndarray) -> bytes:
    return hashlib.sha256(np.ascontiguousarray(values, dtype=np.float64).tobytes()).digest()


def _cached(key: tuple[Any, ...], compute: Callable[[], T] | None) -> T | None:
    """The cached value, or (when `compute` is given) a freshly computed and stored one."""
    cache = _cache()
    found = cache.get(key)
    if found is not None or compute is None:
        return found
    value = compute()
    cache.put(key, value)
    return value


def interval(values: np.ndarray, compute: bool = True) -> MeanInterval | None:
    """The mean with its 95% percentile-bootstrap interval (None if not cached and not computed)."""
    key = ("ci", _digest(values), CONFIDENCE, N_RESAMPLES, SEED)
    return _cached(
        key,
        (lambda: bootstrap_ci(values.tolist(), CONFIDENCE, N_RESAMPLES, SEED)) if compute else None,
    )


def tests(a: np.ndarray, b: np.ndarray, compute: bool = True) -> Comparison | None:
    """Wins, ties, losses and both two-sided p-values of b against a (None if not computed)."""
    key = ("pair", _digest(a), _digest(b), N_RESAMPLES, SEED)
    return _cached(
        key,
        (lambda: compare_runs(a.tolist(), b.tolist(), n_resamples=N_RESAMPLES, seed=SEED))
        if compute
        else None,
    )


def counts(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int]:
    """(wins, ties, losses) of b against a with the tolerance compare_runs uses."""
    deltas = b - a
    wins = int(np.count_nonzero(deltas > TIE_TOLERANCE))
    losses = int(np.count_nonzero(deltas < -TIE_TOLERANCE))
    return wins, int(deltas.size) - wins - losses, losses
