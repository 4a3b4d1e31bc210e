"""audit_sample and audit_sample_query: a judge's audit sample of a test set's queries

Revision ID: 0013_audit_sample
Revises: 0012_session_token
Create Date: 2026-11-26 19:10:00

Per test set and judge, the seed of the draw and the drawn queries in draw order (so a larger
N extends the same sample). New tables only: nothing to fill from existing data.
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_audit_sample"
down_revision = "0012_session_token"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "audit_sample",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        sa.Column("judge_id", sa.Integer(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["judge_id"],
            ["judge.id"],
            name=op.f("fk_audit_sample_judge_id_judge"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["test_set_id"],
            ["test_set.id"],
            name=op.f("fk_audit_sample_test_set_id_test_set"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_sample")),
        sa.UniqueConstraint(
            "test_set_id", "judge_id", name=op.f("uq_audit_sample_test_set_id_judge_id")
        ),
    )
    with op.batch_alter_table("audit_sample", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_sample_judge_id"), ["judge_id"], unique=False)
    op.create_table(
        "audit_sample_query",
        sa.Column("sample_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["query_id"],
            ["query.id"],
            name=op.f("fk_audit_sample_query_query_id_query"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["sample_id"],
            ["audit_sample.id"],
            name=op.f("fk_audit_sample_query_sample_id_audit_sample"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("sample_id", "position", name=op.f("pk_audit_sample_query")),
        sa.UniqueConstraint(
            "sample_id", "query_id", name=op.f("uq_audit_sample_query_sample_id_query_id")
        ),
    )
    with op.batch_alter_table("audit_sample_query", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_audit_sample_query_query_id"), ["query_id"], unique=False
        )


def downgrade():
    with op.batch_alter_table("audit_sample_query", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_sample_query_query_id"))
    op.drop_table("audit_sample_query")
    with op.batch_alter_table("audit_sample", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_sample_judge_id"))
    op.drop_table("audit_sample")
