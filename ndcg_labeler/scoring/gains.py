"""The gain rule: what a grade is worth to the graded measures ((n)DCG).

    linear: gain(g) = g               (trec_eval's default: the gain is the relevance level)
    exp:    gain(g) = 2**g - 1        (C. Burges et al., "Learning to rank using gradient
                                       descent", ICML 2005)

Either way a grade <= 0 and an unjudged document (NaN) gain 0, as in trec_eval v10: only
documents judged relevant add to DCG and IDCG.
"""

from __future__ import annotations

import numpy as np

from .options import GainKind


def gain_values(grades: np.ndarray, kind: GainKind = "linear") -> np.ndarray:
    """Gains for float grades: NaN (unjudged) and grades <= 0 give 0; `exp` is 2**g - 1."""
    # fmax ignores NaN, so unjudged (NaN) and grades <= 0 both become 0 in one pass.
    clipped = np.fmax(np.asarray(grades, dtype=np.float64), 0.0)
    if kind == "linear":
        return clipped
    if kind == "exp":
        return np.exp2(clipped, out=clipped) - 1.0  # 2**0 - 1 = 0 keeps zero gains zero
    raise ValueError(f"unknown gain {kind!r}")
