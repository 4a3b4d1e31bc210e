"""Labeling progress: mine (pairs I answered / pairs open to me) and the test set's."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judgment, Pair, TestSet, User
from ndcg_labeler.services.labeling.queue import COUNTED, import_source_ids


@dataclass(frozen=True)
class Progress:
    """Counts for the progress bars; `mine_*` are the user's, `done`/`pairs` the test set's."""

    mine_done: int
    mine_total: int
    done: int
    pairs: int
    target: int

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
    Two queries: the pool's size, and one pass over the test set's counted judgments grouped
    per pair (pairs nobody answered need no row).
    """
    target = test_set.judgments_per_pair
    pairs = db.session.scalar(
        sa.select(sa.func.count()).select_from(Pair).where(Pair.test_set_id == test_set.id)
    )
    per_pair = (
        sa.select(
            Judgment.query_id,
            Judgment.chunk_id,
            sa.func.count().label("n"),
            sa.func.sum(sa.case((Judgment.annotator_id == user.id, 1), else_=0)).label("mine"),
        )
        .where(
            Judgment.test_set_id == test_set.id,
            Judgment.status.in_(COUNTED),
            Judgment.annotator_id.not_in(import_source_ids()),
        )
        .group_by(Judgment.query_id, Judgment.chunk_id)
        .subquery("per_pair")
    )
    in_pool = sa.exists().where(
        Pair.query_id == per_pair.c.query_id, Pair.chunk_id == per_pair.c.chunk_id
    )
    full = per_pair.c.n >= target
    mine = per_pair.c.mine > 0
    row = db.session.execute(
        sa.select(
            sa.func.sum(sa.case((full, 1), else_=0)),
            sa.func.sum(sa.case((mine, 1), else_=0)),
            # Closed to me: others already gave it every answer it needs.
            sa.func.sum(sa.case((sa.and_(full, ~mine), 1), else_=0)),
        ).where(in_pool)
    ).one()
    done, mine_done, closed = (int(v or 0) for v in row)
    total = int(pairs or 0)
    return Progress(
        mine_done=mine_done, mine_total=total - closed, done=done, pairs=total, target=target
    )
