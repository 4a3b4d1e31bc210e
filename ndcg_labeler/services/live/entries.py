"""A run's ranked lists as stored (RunQuery rows): read whole, or one query at a time.

Only a full scoring of a run reads all of them (as RunData, unless the upload hands its own
over); re-scoring a changed query reads that query's row alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import decode_docids, decode_top_docids
from ndcg_labeler.models import Run, RunQuery
from ndcg_labeler.services._db import select_rows
from ndcg_labeler.services.live.ranked import RankedBuffer, RunData


def run_key(run: Run) -> tuple[object, ...]:
    """What identifies a run's stored content (ids may be reused after a delete on SQLite)."""
    return (run.id, run.sha256, str(run.uploaded_at), run.depth, run.num_entries)


def load_run_data(run: Run) -> RunData:
    """Every ranked list of the run (for a full scoring), in RunQuery order."""
    table = RunQuery.__table__
    rows = select_rows(
        sa.select(table.c.query_id, table.c.docids)
        .where(table.c.run_id == run.id)
        .order_by(table.c.id),
        binary=True,
    )
    return RunData(
        run_key(run), (r[0] for r in rows), [decode_docids(r[1]) for r in rows], run.name
    )


_ONE_QUERY = sa.select(RunQuery.__table__.c.docids).where(
    RunQuery.__table__.c.run_id == sa.bindparam("run_id"),
    RunQuery.__table__.c.query_id == sa.bindparam("query_id"),
)


def query_docids(run_id: int, query_id: int) -> list[str] | None:
    """One query's ranked docids in the run, best first (None: the run has no ranking for it)."""
    blob = db.session.scalar(_ONE_QUERY, {"run_id": run_id, "query_id": query_id})
    if blob is None:
        return None
    text = decode_docids(blob).decode("utf-8")
    return text.split("\n") if text else []


def top_lists(run: Run, depth: int) -> dict[int, list[str]]:
    """{query id: the run's top `depth` docids} for every query the run ranks."""
    table = RunQuery.__table__
    rows = select_rows(
        sa.select(table.c.query_id, table.c.docids).where(table.c.run_id == run.id), binary=True
    )
    # Only the head of each list is decompressed: a run of depth 1,000 compared at k = 10.
    return {int(query_id): decode_top_docids(blob, depth) for query_id, blob in rows}


def uploaded_run_data(
    run: Run,
    query_ids: list[int],
    blobs: Sequence[bytes | memoryview],
    buffer: RankedBuffer | None = None,
) -> RunData:
    """The ranked lists an upload has at hand, as RunData (no read back from the database).

    `buffer` (data, tok_off, row_off, hashes), when given, is the blobs' content already laid
    out the way RunData keeps it, which saves joining and scanning them again.
    """
    if buffer is None:
        return RunData(run_key(run), query_ids, [bytes(blob) for blob in blobs], run.name)
    return RunData.from_buffer(run_key(run), query_ids, run.name, *buffer)
