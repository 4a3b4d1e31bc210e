"""Uncertain first: the queued pairs where an ensemble's members disagree most go to the front.

An ensemble of judges stores, with its answer of each pair, the spread of its members' grades
(highest − lowest). Its open pairs (fewer answers than the test set's target) with a spread
above 0 get priorities −n … −1, largest spread first (ties: query id, then chunk id): being
negative, they come before every pair pooled by rank or imported (priorities ≥ 0), as the
pairs of `pool --for-compare` do.
"""

from __future__ import annotations

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, MachineJudgment, Pair, TestSet
from ndcg_labeler.services import ServiceError


def _spreads(test_set_id: int, judge_id: int) -> dict[tuple[int, int], int]:
    """{(query id, chunk id): spread} of the ensemble's latest readable answer of each pair."""
    mj = MachineJudgment
    rows = db.session.execute(
        sa.select(mj.query_id, mj.chunk_id, mj.spread)
        .where(mj.test_set_id == test_set_id, mj.judge_id == judge_id, mj.status == "labeled")
        .order_by(mj.id)
    )
    return {(q, c): int(s or 0) for q, c, s in rows}  # the newest answer wins


def queue_uncertain_first(test_set: TestSet, judge_name: str) -> int:
    """Move the open pairs the ensemble's members disagree on to the front of the queue, the
    largest spread first; returns how many were moved. Commits."""
    judge = db.session.scalar(sa.select(Judge).where(Judge.name == judge_name))
    if judge is None:
        raise ServiceError(f"unknown judge '{judge_name}'")
    if not judge.ensemble:
        raise ServiceError(
            f"'{judge_name}' is a single judge: --uncertain-first needs an ensemble, whose "
            "members' disagreement is the uncertainty"
        )
    spreads = _spreads(test_set.id, judge.id)
    rows = db.session.execute(
        sa.select(Pair.id, Pair.query_id, Pair.chunk_id).where(
            Pair.test_set_id == test_set.id, Pair.answers < test_set.judgments_per_pair
        )
    )
    chosen = [
        (spreads[(q, c)], q, c, pair_id) for pair_id, q, c in rows if spreads.get((q, c), 0) > 0
    ]
    chosen.sort(key=lambda row: (-row[0], row[1], row[2]))
    n = len(chosen)
    if chosen:
        table = Pair.__table__
        db.session.execute(
            sa.update(table)
            .where(table.c.id == sa.bindparam("b_id"))
            .values(priority=sa.bindparam("b_priority")),
            [{"b_id": row[3], "b_priority": place - n} for place, row in enumerate(chosen)],
        )
    db.session.commit()
    return n
