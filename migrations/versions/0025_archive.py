"""run_score: compact, exact storage of the stored per-query scores (formats.score_storage, v1)

Revision ID: 0025_archive
Revises: 0024_compact
Create Date: 2026-11-27 01:30:00

A run's stored scores were an .npz of float64 arrays, 5.4 MB at 7,000 queries: more than the
2 MB an archived run may take in all. Version 1 keeps what can be recomputed bit for bit
(nDCG from DCG and IDCG, P, recall and Judged from whole counts) as nothing or small integers
and the rest as XOR deltas between cutoffs, zlib-compressed: ~0.8 MB. No column changes: the
rows are rewritten in place, in batches, both ways; new code still reads an .npz row.
"""

import sqlalchemy as sa
from alembic import op

from ndcg_labeler.formats import decode_score_arrays, encode_score_arrays, legacy_score_blob

revision = "0025_archive"
down_revision = "0024_compact"
branch_labels = None
depends_on = None

# A row is ~5 MB as .npz: a few at a time keep the migration's memory small.
_BATCH = 20
_TABLE = sa.table("run_score", sa.column("id", sa.Integer), sa.column("data", sa.LargeBinary))


def _rewrite(encode: bool) -> None:
    """Every run_score row decoded (either encoding) and written back compact, or as .npz."""
    bind = op.get_bind()
    last = 0
    while True:
        rows = bind.execute(
            sa.select(_TABLE.c.id, _TABLE.c.data)
            .where(_TABLE.c.id > last)
            .order_by(_TABLE.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        last = rows[-1][0]
        write = encode_score_arrays if encode else legacy_score_blob
        changes = [
            {"row_id": row_id, "new_data": write(decode_score_arrays(data))}
            for row_id, data in rows
        ]
        bind.execute(
            _TABLE.update()
            .where(_TABLE.c.id == sa.bindparam("row_id"))
            .values(data=sa.bindparam("new_data")),
            changes,
        )


def upgrade():
    _rewrite(encode=True)


def downgrade():
    _rewrite(encode=False)
