"""Combine several annotators' grades of one pair into the grade used for scoring."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

POLICIES: tuple[str, ...] = ("median", "mean", "max", "min", "majority")
DEFAULT_POLICY = "median"


def _median(grades: list[int]) -> int:
    """Middle grade; an even count takes the lower of the two middle grades."""
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]


def _mean(grades: list[int]) -> int:
    """Arithmetic mean rounded to the nearest grade, exact halves rounding down."""
    total, count = sum(grades), len(grades)
    floor, remainder = divmod(total, count)  # integer arithmetic: no float rounding surprises
    return floor + 1 if 2 * remainder > count else floor


def _majority(grades: list[int]) -> int:
    """Most frequent grade; a tie goes to the lowest of the tied grades."""
    counts = Counter(grades)
    best = max(counts.values())
    return min(grade for grade, count in counts.items() if count == best)


_RULES: dict[str, Callable[[list[int]], int]] = {
    "median": _median,
    "mean": _mean,
    "max": max,
    "min": min,
    "majority": _majority,
}


def aggregate(grades: Sequence[int], policy: str = DEFAULT_POLICY) -> int | None:
    """The pair's grade under `policy` (one of POLICIES); None when nobody graded it.

    The caller leaves out skips and "can't tell" answers before calling.
    """
    rule = _RULES.get(policy)
    if rule is None:
        raise ValueError(f"unknown aggregation policy {policy!r}; choose one of {POLICIES}")
    values = [int(g) for g in grades]
    if not values:
        return None
    return rule(values)


def resolve(
    grades: Sequence[int], policy: str = DEFAULT_POLICY, adjudicated: int | None = None
) -> int | None:
    """The adjudicated grade when there is one, else `aggregate(grades, policy)`."""
    if adjudicated is not None:
        if policy not in _RULES:
            raise ValueError(f"unknown aggregation policy {policy!r}; choose one of {POLICIES}")
        return int(adjudicated)
    return aggregate(grades, policy)
