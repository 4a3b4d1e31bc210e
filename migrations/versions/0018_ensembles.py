"""Few-shot judges, ensembles of judges and the machine-vs-people queue

Revision ID: 0018_ensembles
Revises: 0017_judgment_via
Create Date: 2026-11-26 22:10:00

judge.few_shot: how many human-graded examples of the test set go into each prompt.
judge.ensemble: an ensemble's definition (member judges, how they combine); "" for one model.
machine_judgment.spread: an ensemble answer's highest minus lowest member grade.
machine_conflict: a person's grade two or more steps from a machine's, until resolved.
"""

import sqlalchemy as sa
from alembic import op

revision = "0018_ensembles"
down_revision = "0017_judgment_via"
branch_labels = None
depends_on = None


def upgrade():
    # In place on SQLite: recreating the table would cascade-delete the rows that refer to it.
    with op.batch_alter_table("judge", recreate="never") as batch_op:
        batch_op.add_column(sa.Column("few_shot", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("ensemble", sa.Text(), server_default="", nullable=False))
    # In place on SQLite: recreating the table would cascade-delete the rows that refer to it.
    with op.batch_alter_table("machine_judgment", recreate="never") as batch_op:
        batch_op.add_column(sa.Column("spread", sa.Integer(), nullable=True))
    op.create_table(
        "machine_conflict",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("chunk_id", sa.Integer(), nullable=False),
        sa.Column("judge_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=True),
        sa.Column("machine_grade", sa.Integer(), nullable=False),
        sa.Column("human_grade", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_by_id", sa.Integer(), nullable=True),
        sa.Column("resolution", sa.String(length=16), server_default="", nullable=False),
        sa.ForeignKeyConstraint(["test_set_id"], ["test_set.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["query_id"], ["query.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["chunk_id"], ["chunk.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["judge_id"], ["judge.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["annotator_id"], ["user.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["resolved_by_id"], ["user.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("query_id", "chunk_id", "judge_id", "annotator_id"),
    )
    op.create_index(
        op.f("ix_machine_conflict_test_set_id"), "machine_conflict", ["test_set_id"], unique=False
    )


def downgrade():
    op.drop_index(op.f("ix_machine_conflict_test_set_id"), table_name="machine_conflict")
    op.drop_table("machine_conflict")
    # In place on SQLite: recreating the table would cascade-delete the rows that refer to it.
    with op.batch_alter_table("machine_judgment", recreate="never") as batch_op:
        batch_op.drop_column("spread")
    # In place on SQLite: recreating the table would cascade-delete the rows that refer to it.
    with op.batch_alter_table("judge", recreate="never") as batch_op:
        batch_op.drop_column("ensemble")
        batch_op.drop_column("few_shot")
