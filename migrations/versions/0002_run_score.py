"""run_score: stored per-query scores of each run and scoring setting

Revision ID: 0002_run_score
Revises: 0001
Create Date: 2026-11-22 23:40:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0002_run_score"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "run_score",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("settings", sa.String(length=200), nullable=False),
        sa.Column("labels_version", sa.Integer(), nullable=False),
        sa.Column("max_event_id", sa.BigInteger(), nullable=False),
        sa.Column("queries_key", sa.Integer(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["run.id"], name=op.f("fk_run_score_run_id_run"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_score")),
        sa.UniqueConstraint("run_id", "settings", name=op.f("uq_run_score_run_id_settings")),
    )


def downgrade():
    op.drop_table("run_score")
