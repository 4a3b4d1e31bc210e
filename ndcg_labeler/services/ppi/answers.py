"""How many of a judge's pairs on a test set have no readable answer (failed or unparsed).

Machine labels take each pair's latest answer with a grade (live.grades.machine_rows), under
any prompt version; a pair whose every answer failed or was unparsed has none, and is scored
as unjudged. Under fill:JUDGE people's grade stands in for the judge's, so there a pair counts
only when nobody graded it (no graded judgment, imported or not, and no adjudication).
"""

from __future__ import annotations

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Adjudication, Judgment, MachineJudgment


def failed_answers(test_set_id: int, judge_id: int, fill: bool = False) -> tuple[int, int]:
    """(pairs without a readable answer, pairs answered) of the judge on the test set."""
    mj = MachineJudgment
    readable = sa.func.max(sa.case((mj.status == "labeled", 1), else_=0))
    pairs = (
        sa.select(mj.query_id, mj.chunk_id, readable.label("readable"))
        .where(mj.judge_id == judge_id, mj.test_set_id == test_set_id)
        .group_by(mj.query_id, mj.chunk_id)
        .subquery()
    )
    failed = pairs.c.readable == 0
    if fill:
        graded = sa.exists().where(
            Judgment.query_id == pairs.c.query_id,
            Judgment.chunk_id == pairs.c.chunk_id,
            Judgment.status == "graded",
        )
        settled = sa.exists().where(
            Adjudication.query_id == pairs.c.query_id,
            Adjudication.chunk_id == pairs.c.chunk_id,
        )
        failed = sa.and_(failed, ~graded, ~settled)
    counted = sa.func.coalesce(sa.func.sum(sa.case((failed, 1), else_=0)), 0)
    row = db.session.execute(sa.select(sa.func.count(), counted).select_from(pairs)).one()
    return int(row[1]), int(row[0])
