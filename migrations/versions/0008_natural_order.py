"""natural order of queries and chunks: a stored sort key (q2 before q10)

Revision ID: 0008_natural_order
Revises: 0007_endpoints
Create Date: 2026-11-23 04:20:00

The key is natural_key(qid) / natural_key(docid), computed in Python for existing rows; the
application sets it on every insert. "C" collation on PostgreSQL so that the order is byte
order whatever the server's locale.
"""

import sqlalchemy as sa
from alembic import op

from ndcg_labeler.formats import natural_key

revision = "0008_natural_order"
down_revision = "0007_endpoints"
branch_labels = None
depends_on = None

_KEY = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
_TABLES = (("query", "qid", "ix_query_natural"), ("chunk", "docid", "ix_chunk_natural"))
_BATCH = 5000


def upgrade():
    bind = op.get_bind()
    for table, column, index in _TABLES:
        op.add_column(table, sa.Column("sort_key", _KEY, nullable=True))
        t = sa.table(table, sa.column("id", sa.Integer), sa.column(column, sa.String))
        keyed = sa.table(table, sa.column("id", sa.Integer), sa.column("sort_key", sa.Text))
        update = (
            sa.update(keyed)
            .where(keyed.c.id == sa.bindparam("b_id"))
            .values(sort_key=sa.bindparam("b_key"))
        )
        rows = bind.execute(sa.select(t.c.id, t.c[column])).all()
        for start in range(0, len(rows), _BATCH):
            batch = rows[start : start + _BATCH]
            bind.execute(update, [{"b_id": i, "b_key": natural_key(v)} for i, v in batch])
        with op.batch_alter_table(table) as batch_op:
            batch_op.alter_column("sort_key", existing_type=_KEY, nullable=False)
        op.create_index(index, table, ["test_set_id", "sort_key"], unique=False)


def downgrade():
    for table, _, index in reversed(_TABLES):
        op.drop_index(index, table_name=table)
        with op.batch_alter_table(table) as batch_op:
            batch_op.drop_column("sort_key")
