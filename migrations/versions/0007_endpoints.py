"""retriever endpoints

Revision ID: 0007_endpoints
Revises: 0006_audit
Create Date: 2026-11-23 00:34:00.686284

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0007_endpoints"
down_revision = "0006_audit"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "retriever_endpoint",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("method", sa.String(length=8), nullable=False),
        sa.Column("body_template", sa.Text(), nullable=False),
        sa.Column("headers", sa.JSON(), nullable=True),
        sa.Column("hits_expr", sa.String(length=500), nullable=False),
        sa.Column("id_expr", sa.String(length=500), nullable=False),
        sa.Column("score_expr", sa.String(length=500), nullable=False),
        sa.Column("text_expr", sa.String(length=500), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("requests_per_minute", sa.Integer(), nullable=False),
        sa.Column("timeout", sa.Double(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["test_set_id"],
            ["test_set.id"],
            name=op.f("fk_retriever_endpoint_test_set_id_test_set"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_retriever_endpoint")),
        sa.UniqueConstraint(
            "test_set_id", "name", name=op.f("uq_retriever_endpoint_test_set_id_name")
        ),
    )
    with op.batch_alter_table("retriever_endpoint", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_retriever_endpoint_test_set_id"), ["test_set_id"], unique=False
        )


def downgrade():
    with op.batch_alter_table("retriever_endpoint", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_retriever_endpoint_test_set_id"))

    op.drop_table("retriever_endpoint")
