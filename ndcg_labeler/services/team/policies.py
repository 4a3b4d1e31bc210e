"""Does disagreement change the answer? Each run's mean NDCG@k under every aggregation policy.

The runs are ranked under each policy by mean NDCG@k (higher first; a run without a defined
mean last). Every policy's order is compared with the order under the test set's own policy,
two runs at a time: a pair of runs is "reordered" by a policy when which one is ahead (or that
they tie) differs from the test set's policy. Means within TIE of each other tie.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ndcg_labeler.models import TestSet
from ndcg_labeler.scoring import POLICIES
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.live import ScoreOptions, score_run

TIE = 1e-9


@dataclass(frozen=True)
class Cell:
    """One run under one policy: its mean NDCG@k and how many queries the mean covers."""

    mean: float | None
    queries_in_mean: int
    rank: int | None


@dataclass(frozen=True)
class RunRow:
    """One run's cells, by policy."""

    run_id: int
    name: str
    cells: dict[str, Cell]


@dataclass(frozen=True)
class Reorder:
    """Under `policy`, `first` vs `second` compares differently than under the base policy."""

    policy: str
    first: str
    second: str
    base: str  # "ahead", "behind" or "tie": first vs second under the base policy
    now: str  # the same under `policy`

    def describe(self) -> str:
        """Plain words for the order under `policy`: 'b ranks above a' or 'a and b tie'."""
        return _words(self.first, self.second, self.now)

    def before(self) -> str:
        """The same words for the order under the base policy."""
        return _words(self.first, self.second, self.base)


def _words(first: str, second: str, relation: str) -> str:
    if relation == "tie":
        return f"{first} and {second} tie"
    high, low = (first, second) if relation == "ahead" else (second, first)
    return f"{high} ranks above {low}"


@dataclass(frozen=True)
class PolicyComparison:
    """The policy table of a test set's runs at k."""

    k: int
    base: str
    policies: tuple[str, ...]
    rows: list[RunRow]
    reorders: dict[str, list[Reorder]]

    @property
    def same_order(self) -> bool:
        """True when every policy ranks the runs as the test set's own policy does."""
        return not any(self.reorders.values())


def _relation(a: float | None, b: float | None) -> str | None:
    """'ahead', 'behind' or 'tie' of mean a against mean b; None when either is undefined."""
    if a is None or b is None:
        return None
    if abs(a - b) <= TIE:
        return "tie"
    return "ahead" if a > b else "behind"


def _ranks(means: dict[int, float | None]) -> dict[int, int | None]:
    """Competition ranks (1, 2, 2, 4) by mean, higher first; undefined means get no rank."""
    defined = sorted((m for m in means.values() if m is not None), reverse=True)
    ranks: dict[int, int | None] = {}
    for run_id, mean in means.items():
        if mean is None:
            ranks[run_id] = None
        else:
            ranks[run_id] = 1 + sum(1 for other in defined if other - mean > TIE)
    return ranks


def compare_policies(test_set: TestSet, k: int = 10) -> PolicyComparison:
    """Mean NDCG@k of every run under each policy, and which policies reorder which runs."""
    runs = run_service.list_runs(test_set)
    means: dict[str, dict[int, float | None]] = {}
    covered: dict[str, dict[int, int]] = {}
    for policy in POLICIES:
        options = ScoreOptions(k=k, policy=policy).checked()
        means[policy], covered[policy] = {}, {}
        for run in runs:
            scores = score_run(run, options)
            means[policy][run.id] = scores.mean_ndcg
            covered[policy][run.id] = scores.queries_in_mean
    ranks = {policy: _ranks(means[policy]) for policy in POLICIES}
    rows = [
        RunRow(
            run.id,
            run.name,
            {p: Cell(means[p][run.id], covered[p][run.id], ranks[p][run.id]) for p in POLICIES},
        )
        for run in runs
    ]
    base = test_set.aggregation
    reorders: dict[str, list[Reorder]] = {p: [] for p in POLICIES if p != base}
    for policy in reorders:
        for first, second in itertools.combinations(runs, 2):
            before = _relation(means[base][first.id], means[base][second.id])
            after = _relation(means[policy][first.id], means[policy][second.id])
            if before is not None and after is not None and before != after:
                reorders[policy].append(Reorder(policy, first.name, second.name, before, after))
    return PolicyComparison(k, base, POLICIES, rows, reorders)
