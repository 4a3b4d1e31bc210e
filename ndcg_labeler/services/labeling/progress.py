"""Labeling progress: the three figures every page shows, defined once.

- graded: pool pairs with at least one grade, from a person or imported qrels;
- complete: pool pairs with all the people's answers the test set wants (judgments per pair;
  a grade or "can't tell" counts, imported qrels do not);
- mine: pool pairs I answered, of those still open to me.

Beside them, not in them: graded_outside, pairs outside the pool with a grade (given in place
on the drill-down or compare page, or by `flask label`), which scores count.
"""

from __future__ import annotations

from dataclasses import dataclass

from ndcg_labeler.models import TestSet, User
from ndcg_labeler.services import tallies


@dataclass(frozen=True)
class Progress:
    """Counts for the progress bars; `mine_*` are the user's, `done`/`pairs` the test set's."""

    mine_done: int
    mine_total: int
    done: int
    pairs: int
    target: int
    graded: int = 0
    """Pool pairs with at least one grade (people or imported qrels)."""
    graded_outside: int = 0
    """(query, chunk) pairs outside the pool with at least one grade: shown beside graded."""

    @property
    def graded_percent(self) -> float:
        """Share of the pool's pairs with a grade, 0–100."""
        return 100.0 * self.graded / self.pairs if self.pairs else 0.0

    @property
    def mine_percent(self) -> float:
        """Share of the pairs open to me that I answered, 0–100."""
        return 100.0 * self.mine_done / self.mine_total if self.mine_total else 100.0

    @property
    def percent(self) -> float:
        """Share of the test set's pairs that reached their target, 0–100."""
        return 100.0 * self.done / self.pairs if self.pairs else 100.0


def progress(test_set: TestSet, user: User) -> Progress:
    """Mine: pairs I graded or found can't-tell / pairs I answered or that still need answers.

    The test set's: pairs with at least `judgments_per_pair` people's answers / all pairs.
    Two primary-key reads of stored counters (services/tallies/counters.py), whatever the pool's
    size: pairs per number of answers, and mine per number of answers.
    """
    target = test_set.judgments_per_pair
    pool = tallies.pool_counts(test_set.id)
    mine = tallies.annotator_counts(test_set.id, user.id)
    done = pool.done(target)
    # Closed to me: others already gave it every answer it needs.
    closed = done - mine.full(target)
    return Progress(
        mine_done=mine.answered,
        mine_total=pool.pairs - closed,
        done=done,
        pairs=pool.pairs,
        target=target,
        graded=pool.graded_pairs,
        graded_outside=pool.graded_outside,
    )
