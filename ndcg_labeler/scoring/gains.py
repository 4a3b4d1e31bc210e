"""Gains from grades and the rank discount 1/log2(rank + 1), as trec_eval computes them."""

from __future__ import annotations

import math

import numpy as np

from .types import GainKind

_discount_cache: np.ndarray = np.empty(0, dtype=np.float64)


def gain_values(grades: np.ndarray, kind: GainKind = "linear") -> np.ndarray:
    """Gains for float grades: NaN (unjudged) and grades <= 0 give 0; `exp` is 2**g - 1."""
    # fmax ignores NaN, so unjudged (NaN) and grades <= 0 both become 0 in one pass.
    clipped = np.fmax(np.asarray(grades, dtype=np.float64), 0.0)
    if kind == "linear":
        return clipped
    if kind == "exp":
        return np.exp2(clipped, out=clipped) - 1.0  # 2**0 - 1 = 0 keeps zero gains zero
    raise ValueError(f"unknown gain {kind!r}")


def log2_ranks(n: int) -> np.ndarray:
    """log2(rank + 1) for ranks 1..n (read-only view; divide gains by it like trec_eval)."""
    global _discount_cache
    if n > _discount_cache.size:
        size = max(n, 2 * _discount_cache.size, 1024)
        # math.log2 is the C library's log2, the function trec_eval calls, so DCG terms
        # are bit-identical to trec_eval's `gain / log2(i + 2)`.
        values = np.array([math.log2(r + 1) for r in range(1, size + 1)], dtype=np.float64)
        values.setflags(write=False)
        _discount_cache = values
    return _discount_cache[:n]
