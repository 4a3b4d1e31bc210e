"""Inter-annotator agreement on ordinal grades: percent, Cohen, Fleiss, Krippendorff, consensus."""

from __future__ import annotations

import itertools
import warnings
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .aggregation import DEFAULT_POLICY, POLICIES, aggregate

# One graded judgment: (item, rater, grade). An item is a query–chunk pair; any hashable key works.
# Skips and "can't tell" answers are left out by the caller.
Rating = tuple[Hashable, Hashable, int]


@dataclass(frozen=True)
class CohenPair:
    """Cohen's weighted kappa of two raters over the items both graded (None when undefined)."""

    a: Hashable
    b: Hashable
    n: int
    kappa_quadratic: float | None
    kappa_linear: float | None


@dataclass(frozen=True)
class AgreementSummary:
    """Every agreement figure of a set of ratings; `as_dict()` is the CLI's JSON object."""

    pairs_with_2plus: int
    percent_agreement: float | None
    fleiss_kappa: float | None
    krippendorff_alpha_ordinal: float | None
    cohen: list[CohenPair]

    def as_dict(self) -> dict[str, Any]:
        """Plain dict with the CLI's keys; cohen is a list of {a, b, n, kappa_quadratic, ...}."""
        return asdict(self)


@dataclass(frozen=True)
class ConsensusAgreement:
    """How often one rater matches the aggregate of the others on items they share."""

    rater: Hashable
    items: int
    agreement: float | None
    mean_abs_diff: float | None


def _by_item(
    ratings: Iterable[Rating], scale_max: int | None = None
) -> dict[Hashable, dict[Hashable, int]]:
    """{item: {rater: grade}}; refuses a rater grading one item twice or a grade off the scale."""
    items: dict[Hashable, dict[Hashable, int]] = defaultdict(dict)
    for item, rater, grade in ratings:
        grade = int(grade)
        if grade < 0 or (scale_max is not None and grade > scale_max):
            raise ValueError(f"grade {grade} of item {item!r} is outside 0..{scale_max}")
        if rater in items[item]:
            raise ValueError(f"rater {rater!r} rated item {item!r} more than once")
        items[item][rater] = grade
    return items


def _counts(ratings: Iterable[Rating], scale_max: int) -> np.ndarray:
    """Items × grades matrix: how many raters gave each grade, for items with ≥ 2 ratings."""
    rows = [
        np.bincount(list(by_rater.values()), minlength=scale_max + 1)
        for by_rater in _by_item(ratings, scale_max).values()
        if len(by_rater) >= 2
    ]
    if not rows:
        return np.zeros((0, scale_max + 1), dtype=np.int64)
    return np.vstack(rows).astype(np.int64)


def _item_agreement(counts: np.ndarray) -> np.ndarray:
    """Per item, the share of its rater pairs that agree: Σ_k n_k(n_k − 1) / (n(n − 1))."""
    per_item = counts.sum(axis=1)
    return (counts * (counts - 1)).sum(axis=1) / (per_item * (per_item - 1))


def percent_agreement(ratings: Iterable[Rating]) -> float | None:
    """Mean pairwise exact agreement over items with at least two ratings (None if there are none).

    For each item with n ≥ 2 ratings, take all n(n − 1)/2 unordered pairs of its raters and count
    the share whose grades are equal; then average those shares over items, each item weighing the
    same. With two raters per item this is the plain share of items graded alike; in general it is
    Fleiss' observed agreement P̄ (Fleiss 1971).
    """
    counts = [Counter(by_rater.values()) for by_rater in _by_item(ratings).values()]
    shares = [
        sum(c * (c - 1) for c in grades.values()) / (n * (n - 1))
        for grades in counts
        if (n := sum(grades.values())) >= 2
    ]
    return sum(shares) / len(shares) if shares else None


def _sorted_keys(keys: Iterable[Hashable]) -> list[Hashable]:
    """Keys in natural order, or by their text when they do not compare (mixed types)."""
    keys = list(keys)
    try:
        return sorted(keys)  # type: ignore[type-var]
    except TypeError:
        return sorted(keys, key=str)


def _cohen(
    first: Sequence[int], second: Sequence[int], scale_max: int, weights: str
) -> float | None:
    """sklearn's weighted kappa over the full 0..scale_max scale; None when it is undefined."""
    if len(first) < 2:
        return None
    # Imported here: scikit-learn takes seconds to import, which every app start and CLI call
    # would pay even when no kappa is asked for.
    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():
        # sklearn warns and returns NaN when expected disagreement is zero (one shared grade only).
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        kappa = cohen_kappa_score(
            first,
            second,
            labels=list(range(scale_max + 1)),
            weights=weights,
            replace_undefined_by=np.nan,
        )
    return None if np.isnan(kappa) else float(kappa)


def cohen_pairs(ratings: Iterable[Rating], scale_max: int) -> list[CohenPair]:
    """Cohen's kappa, quadratic and linear weights, for every two raters sharing ≥ 1 item.

    Weights use the whole scale 0..scale_max (labels=range(0, scale_max + 1)), so a 0-vs-3
    disagreement weighs the same whether or not grades 1 and 2 were used. `a` sorts before `b`
    and the list is in (a, b) order. A kappa is None when n < 2 or when it is undefined (both raters
    gave one and the same grade to every shared item: no disagreement is possible by chance).
    """
    items = _by_item(ratings, scale_max)
    raters = _sorted_keys({rater for by_rater in items.values() for rater in by_rater})
    rank = {rater: position for position, rater in enumerate(raters)}
    shared: dict[tuple[int, int], tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for by_rater in items.values():
        ordered = sorted(by_rater, key=rank.__getitem__)
        for a, b in itertools.combinations(ordered, 2):
            first, second = shared[(rank[a], rank[b])]
            first.append(by_rater[a])
            second.append(by_rater[b])
    return [
        CohenPair(
            a=raters[a],
            b=raters[b],
            n=len(first),
            kappa_quadratic=_cohen(first, second, scale_max, "quadratic"),
            kappa_linear=_cohen(first, second, scale_max, "linear"),
        )
        for (a, b), (first, second) in sorted(shared.items())
    ]


def fleiss_kappa(ratings: Iterable[Rating], scale_max: int) -> float | None:
    """Fleiss' kappa over items with ≥ 2 ratings, allowing a different number of raters per item.

    Fleiss (1971) assumes every item has the same number m of ratings. We keep every item with
    n_i ≥ 2 ratings rather than only those with the most common count, and use the generalisation
    of Gwet (Handbook of Inter-Rater Reliability, 4th ed., 2014; `fleiss` in the irrCAC package):

        P_i = Σ_k n_ik (n_ik − 1) / (n_i (n_i − 1))      agreeing share of item i's rater pairs
        P̄   = mean of P_i over the N items               (= percent_agreement)
        π_k = (1/N) Σ_i n_ik / n_i                        mean share of grade k per item
        P_e = Σ_k π_k²,    κ = (P̄ − P_e) / (1 − P_e)

    When every n_i = m this is exactly Fleiss (1971). Grades are treated as nominal categories.
    None when no item has two ratings or all ratings share one grade (P_e = 1).
    """
    counts = _counts(ratings, scale_max)
    if counts.shape[0] == 0 or np.count_nonzero(counts.sum(axis=0)) < 2:
        return None
    observed = float(_item_agreement(counts).mean())
    shares = (counts / counts.sum(axis=1, keepdims=True)).mean(axis=0)
    expected = float((shares**2).sum())
    return (observed - expected) / (1.0 - expected)


def krippendorff_alpha_ordinal(ratings: Iterable[Rating], scale_max: int) -> float | None:
    """Krippendorff's alpha with the ordinal metric over the value domain 0..scale_max.

    Computed by the `krippendorff` package from the items × grades count matrix; items with a
    single rating are not pairable and do not count. None when no item has two ratings or all
    pairable ratings share one grade (expected disagreement is zero).
    """
    import krippendorff  # imported here: it is slow to import and only this needs it

    counts = _counts(ratings, scale_max)
    if counts.shape[0] == 0 or np.count_nonzero(counts.sum(axis=0)) < 2:
        return None
    return float(
        krippendorff.alpha(
            value_counts=counts,
            value_domain=list(range(scale_max + 1)),
            level_of_measurement="ordinal",
        )
    )


def agreement_summary(ratings: Iterable[Rating], scale_max: int) -> AgreementSummary:
    """Every agreement figure; `pairs_with_2plus` counts query–chunk pairs with ≥ 2 grades."""
    ratings = list(ratings)
    items = _by_item(ratings, scale_max)
    return AgreementSummary(
        pairs_with_2plus=sum(1 for by_rater in items.values() if len(by_rater) >= 2),
        percent_agreement=percent_agreement(ratings),
        fleiss_kappa=fleiss_kappa(ratings, scale_max),
        krippendorff_alpha_ordinal=krippendorff_alpha_ordinal(ratings, scale_max),
        cohen=cohen_pairs(ratings, scale_max),
    )


def consensus_agreement(
    ratings: Iterable[Rating], rater: Hashable, policy: str = DEFAULT_POLICY
) -> ConsensusAgreement:
    """One rater against the consensus of the others, on items they and ≥ 1 other rater graded.

    The consensus of an item is `aggregate(others' grades, policy)` (median by default, as scoring
    uses). `agreement` is the share of those items where the rater's grade equals it exactly and
    `mean_abs_diff` the mean |grade − consensus|; both None when there is no such item.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown aggregation policy {policy!r}; choose one of {POLICIES}")
    matches = 0
    differences: list[int] = []
    for by_rater in _by_item(ratings).values():
        if rater not in by_rater or len(by_rater) < 2:
            continue
        others = [grade for other, grade in by_rater.items() if other != rater]
        difference = abs(by_rater[rater] - int(aggregate(others, policy)))  # others is non-empty
        matches += difference == 0
        differences.append(difference)
    if not differences:
        return ConsensusAgreement(rater=rater, items=0, agreement=None, mean_abs_diff=None)
    return ConsensusAgreement(
        rater=rater,
        items=len(differences),
        agreement=matches / len(differences),
        mean_abs_diff=sum(differences) / len(differences),
    )
