"""How far machine grades agree with human ones: kappas, confusion, bias, run order.

Pure: lists of paired grades in, figures out. Cohen's kappa comes from scikit-learn and
Kendall's tau from scipy, imported where they are used (start-up stays fast).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Calibration:
    """Machine against human grades on the same pairs."""

    pairs: int
    kappa_quadratic: float | None
    kappa_binary: float | None
    confusion: list[list[int]]  # confusion[human][machine]
    mean_difference: float | None  # machine − human


def _kappa(
    a: Sequence[int], b: Sequence[int], labels: list[int], weights: str | None
) -> float | None:
    from sklearn.metrics import cohen_kappa_score

    if len(a) < 2 or len(set(a) | set(b)) < 2:
        return None  # one category only: kappa is undefined
    value = float(cohen_kappa_score(a, b, labels=labels, weights=weights))
    return None if value != value else value  # NaN when expected agreement is 1


def calibrate(
    human: Sequence[int], machine: Sequence[int], scale_max: int, threshold: int
) -> Calibration:
    """Quadratic-weighted kappa over 0..scale_max, kappa on relevant (grade ≥ threshold) or
    not, the confusion matrix and the mean difference, over paired grades."""
    if len(human) != len(machine):
        raise ValueError("human and machine grades must be paired")
    labels = list(range(scale_max + 1))
    confusion = [[0] * (scale_max + 1) for _ in labels]
    for h, m in zip(human, machine, strict=True):
        confusion[h][m] += 1
    n = len(human)
    binary_h = [int(g >= threshold) for g in human]
    binary_m = [int(g >= threshold) for g in machine]
    return Calibration(
        pairs=n,
        kappa_quadratic=_kappa(human, machine, labels, "quadratic"),
        kappa_binary=_kappa(binary_h, binary_m, [0, 1], None),
        confusion=confusion,
        mean_difference=(sum(machine) - sum(human)) / n if n else None,
    )


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Kendall's tau-b between two orders of the same runs (None with fewer than 2 runs)."""
    from scipy.stats import kendalltau

    if len(a) < 2:
        return None
    value = float(kendalltau(a, b).statistic)
    return None if value != value else value
