"""run_query: compact, exact storage of ranked lists (formats.run_storage, version 1)

Revision ID: 0024_compact
Revises: 0023_fetchlater
Create Date: 2026-11-26 23:30:00

Each ranked list used to be stored as newline-joined docids and raw float64 scores (~18 bytes
an entry). Version 1 compresses the docids and stores scores that are short decimals as exact
integer deltas (~5 bytes an entry). No column changes: the rows are rewritten in place, in
batches, both ways, and every score comes back bit for bit (the encoder checks it).
"""

import sqlalchemy as sa
from alembic import op

from ndcg_labeler.formats import decode_ranked, encode_ranked

revision = "0024_compact"
down_revision = "0023_fetchlater"
branch_labels = None
depends_on = None

_BATCH = 500
_TABLE = sa.table(
    "run_query",
    sa.column("id", sa.Integer),
    sa.column("docids", sa.LargeBinary),
    sa.column("scores", sa.LargeBinary),
)


def _rewrite(encode: bool) -> None:
    """Every run_query row decoded (either encoding) and written back encoded, or raw."""
    bind = op.get_bind()
    last = 0
    while True:
        rows = bind.execute(
            sa.select(_TABLE.c.id, _TABLE.c.docids, _TABLE.c.scores)
            .where(_TABLE.c.id > last)
            .order_by(_TABLE.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        last = rows[-1][0]
        changes = []
        for row_id, docids, scores in rows:
            text, values = decode_ranked(docids, scores)
            new_docids, new_scores = (
                encode_ranked(text, values) if encode else (text, values.tobytes())
            )
            changes.append({"row_id": row_id, "new_docids": new_docids, "new_scores": new_scores})
        bind.execute(
            _TABLE.update()
            .where(_TABLE.c.id == sa.bindparam("row_id"))
            .values(docids=sa.bindparam("new_docids"), scores=sa.bindparam("new_scores")),
            changes,
        )


def upgrade():
    _rewrite(encode=True)


def downgrade():
    _rewrite(encode=False)
