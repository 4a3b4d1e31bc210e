"""Run series and scheduled evaluations: run.series, test_set.series_separator, endpoint
schedules, series settings, checks

Revision ID: 0020_series
Revises: 0019_probes
Create Date: 2026-11-26 22:00:00

Existing runs belong to no series (NULL), existing endpoints have no schedule ("") and no
test set names series by a run-name separator ("").
"""

import sqlalchemy as sa
from alembic import op

revision = "0020_series"
down_revision = "0019_probes"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("test_set", recreate="never") as batch_op:
        batch_op.add_column(
            sa.Column("series_separator", sa.String(length=8), server_default="", nullable=False)
        )
    with op.batch_alter_table("run", recreate="never") as batch_op:
        batch_op.add_column(sa.Column("series", sa.String(length=200), nullable=True))
        batch_op.create_index(batch_op.f("ix_run_series"), ["series"], unique=False)
    with op.batch_alter_table("retriever_endpoint", recreate="never") as batch_op:
        batch_op.add_column(
            sa.Column("schedule", sa.String(length=100), server_default="", nullable=False)
        )
        batch_op.add_column(
            sa.Column("schedule_series", sa.String(length=200), server_default="", nullable=False)
        )
        batch_op.add_column(
            sa.Column("schedule_k", sa.Integer(), server_default="100", nullable=False)
        )
        batch_op.add_column(
            sa.Column("schedule_last_at", sa.DateTime(timezone=True), nullable=True)
        )
    op.create_table(
        "series_setting",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("baseline_run_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["baseline_run_id"],
            ["run.id"],
            name=op.f("fk_series_setting_baseline_run_id_run"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["test_set_id"],
            ["test_set.id"],
            name=op.f("fk_series_setting_test_set_id_test_set"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_series_setting")),
        sa.UniqueConstraint("test_set_id", "name", name=op.f("uq_series_setting_test_set_id_name")),
    )
    op.create_table(
        "series_check",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        sa.Column("series", sa.String(length=200), nullable=False),
        sa.Column("endpoint", sa.String(length=100), nullable=False),
        sa.Column("slot", sa.DateTime(timezone=True), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("baseline_run_id", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(length=20), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("alert", sa.String(length=20), nullable=False),
        sa.Column("alert_error", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["baseline_run_id"],
            ["run.id"],
            name=op.f("fk_series_check_baseline_run_id_run"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["run.id"], name=op.f("fk_series_check_run_id_run"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["test_set_id"],
            ["test_set.id"],
            name=op.f("fk_series_check_test_set_id_test_set"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_series_check")),
    )
    with op.batch_alter_table("series_check") as batch_op:
        batch_op.create_index(batch_op.f("ix_series_check_test_set_id"), ["test_set_id"])


def downgrade():
    # SQLite drops the columns in place (3.35+): recreating run or test_set would cascade-delete
    # the rows that reference them (foreign keys are on).
    op.drop_table("series_check")
    op.drop_table("series_setting")
    with op.batch_alter_table("retriever_endpoint", recreate="never") as batch_op:
        batch_op.drop_column("schedule_last_at")
        batch_op.drop_column("schedule_k")
        batch_op.drop_column("schedule_series")
        batch_op.drop_column("schedule")
    with op.batch_alter_table("run", recreate="never") as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_series"))
        batch_op.drop_column("series")
    with op.batch_alter_table("test_set", recreate="never") as batch_op:
        batch_op.drop_column("series_separator")
