"""Data and read-back helpers for the run tests (test sets are built by tests/factory.py)."""

from __future__ import annotations

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import decode_docids
from ndcg_labeler.models import Query, Run, RunQuery

# A small test set shared by the CLI and live-scoring tests: q1 ranks b (2), z (unjudged), a (3)
# against judged grades 3, 3, 2, 0; q2 ranks y (unjudged), x (1); q3 has no grade; q4 is
# missing from the run.
QUERIES = {"q1": "parental leave", "q2": "expenses", "q3": "dress code", "q4": "sick days"}
QRELS = [
    ("q1", "a", 3),
    ("q1", "b", 2),
    ("q1", "c", 0),
    ("q1", "d", 3),
    ("q2", "x", 1),
    ("q4", "m", 2),
]
RUN = (
    "q1 Q0 b 1 3.0 s\nq1 Q0 z 2 2.0 s\nq1 Q0 a 3 1.0 s\n"
    "q2 Q0 y 1 1.0 s\nq2 Q0 x 2 0.5 s\n"
    "q3 Q0 a 1 1.0 s\n"
)


def stored(run: Run) -> dict[str, list[str]]:
    """qid -> ranked docids as stored in RunQuery rows."""
    rows = db.session.execute(
        sa.select(Query.qid, RunQuery.docids)
        .join(Query, Query.id == RunQuery.query_id)
        .where(RunQuery.run_id == run.id)
    ).all()
    return {qid: decode_docids(blob).decode().split("\n") for qid, blob in rows}


def counts() -> tuple[int, int]:
    """(runs, run_query rows) in the database."""
    return (
        db.session.scalar(sa.select(sa.func.count()).select_from(Run)),
        db.session.scalar(sa.select(sa.func.count()).select_from(RunQuery)),
    )
