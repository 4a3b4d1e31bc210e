"""Aggregation policies for several annotators' grades, ties included."""

from __future__ import annotations

import pytest

from ndcg_labeler.scoring import POLICIES, aggregate, resolve


def test_policies_constant_lists_every_policy_with_median_first() -> None:
    assert POLICIES == ("median", "mean", "max", "min", "majority")


@pytest.mark.parametrize("policy", POLICIES)
def test_nobody_graded_gives_none(policy: str) -> None:
    assert aggregate([], policy) is None


@pytest.mark.parametrize("policy", POLICIES)
def test_a_single_grade_is_itself(policy: str) -> None:
    assert aggregate([2], policy) == 2


@pytest.mark.parametrize(
    ("grades", "expected"),
    [
        ([0, 3, 1], 1),  # sorted 0 1 3 -> middle 1
        ([3, 0, 2, 1], 1),  # sorted 0 1 2 3 -> middles 1 and 2, the lower: 1
        ([2, 3], 2),  # middles 2 and 3 -> 2
        ([1, 1, 3, 3], 1),
    ],
)
def test_median_takes_the_lower_middle_on_even_counts(grades: list[int], expected: int) -> None:
    assert aggregate(grades, "median") == expected
    assert aggregate(grades) == expected  # median is the default


@pytest.mark.parametrize(
    ("grades", "expected"),
    [
        ([1, 2], 1),  # 1.5 -> exact half rounds down
        ([2, 3], 2),  # 2.5 -> 2 (not banker's rounding to even)
        ([0, 1, 1], 1),  # 0.667 -> 1
        ([0, 0, 1], 0),  # 0.333 -> 0
        ([3, 3, 2, 0], 2),  # 8/4 = 2
        ([1, 2, 2, 2], 2),  # 1.75 -> 2
        ([0, 1, 1, 1, 2, 3], 1),  # 8/6 = 1.333 -> 1
        ([-1, 0], -1),  # -0.5 -> down is -1
    ],
)
def test_mean_rounds_to_nearest_with_halves_down(grades: list[int], expected: int) -> None:
    assert aggregate(grades, "mean") == expected


def test_max_and_min() -> None:
    assert aggregate([1, 3, 0], "max") == 3
    assert aggregate([1, 3, 0], "min") == 0


@pytest.mark.parametrize(
    ("grades", "expected"),
    [
        ([2, 2, 3], 2),
        ([3, 1, 3, 1], 1),  # 1 and 3 tie twice each -> the lower grade
        ([0, 1, 2], 0),  # all tie -> the lowest
        ([3, 3, 2, 2, 0], 2),
    ],
)
def test_majority_breaks_ties_towards_the_lower_grade(grades: list[int], expected: int) -> None:
    assert aggregate(grades, "majority") == expected


def test_unknown_policy_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown aggregation policy"):
        aggregate([1], "mode")
    with pytest.raises(ValueError):
        resolve([1], "mode", adjudicated=2)


def test_adjudicated_grade_overrides_everything() -> None:
    assert resolve([3, 3, 3], "median", adjudicated=0) == 0
    assert resolve([], "max", adjudicated=2) == 2


def test_resolve_without_adjudication_aggregates() -> None:
    assert resolve([0, 3, 3], "min") == 0
    assert resolve([0, 3, 3]) == 3
    assert resolve([], "mean") is None
