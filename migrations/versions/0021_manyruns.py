"""Many runs: pinned runs, tags, a stored mean for sorting, and retention (archived runs)

Revision ID: 0021_manyruns
Revises: 0020_series
Create Date: 2026-11-26 22:05:00

run.pinned (false for every existing run), run.mean_ndcg and run.summary (NULL until the
run is next scored under the default options), run.kept_depth and run.archived_at (NULL: no
run is archived yet), and run_tag, one row per tag of a run.
"""

import sqlalchemy as sa
from alembic import op

revision = "0021_manyruns"
down_revision = "0020_series"
branch_labels = None
depends_on = None


def upgrade():
    # In place on SQLite: recreating the table would cascade-delete the rows that refer to it.
    with op.batch_alter_table("run", recreate="never") as batch_op:
        batch_op.add_column(
            sa.Column("pinned", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(sa.Column("mean_ndcg", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("summary", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("kept_depth", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "run_tag",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("tag", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["run.id"], name=op.f("fk_run_tag_run_id_run"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_tag")),
        sa.UniqueConstraint("run_id", "tag", name=op.f("uq_run_tag_run_id_tag")),
    )
    op.create_index(op.f("ix_run_tag_tag"), "run_tag", ["tag"], unique=False)


def downgrade():
    op.drop_index(op.f("ix_run_tag_tag"), table_name="run_tag")
    op.drop_table("run_tag")
    # In place on SQLite: recreating the table would cascade-delete the rows that refer to it.
    with op.batch_alter_table("run", recreate="never") as batch_op:
        batch_op.drop_column("archived_at")
        batch_op.drop_column("kept_depth")
        batch_op.drop_column("summary")
        batch_op.drop_column("mean_ndcg")
        batch_op.drop_column("pinned")
