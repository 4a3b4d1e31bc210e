"""Multiple testing: Holm's step-down adjustment of a family of p-values."""

from __future__ import annotations

from collections.abc import Sequence


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values, in the order given (family-wise error control).

    With the m p-values sorted ascending, p_(i) becomes max over j ≤ i of min(1, (m − j + 1)·p_(j)).
    An undefined p-value (None) stays None but still counts in m, so leaving it out never makes
    the others look more significant.
    """
    m = len(p_values)
    order = sorted((i for i, p in enumerate(p_values) if p is not None), key=lambda i: p_values[i])
    adjusted: list[float | None] = [None] * m
    running = 0.0
    for rank, i in enumerate(order):
        p = p_values[i]
        assert p is not None
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
