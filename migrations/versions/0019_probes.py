"""judge prices, judge_probe and judge_probe_answer: cost of a judge and its gullibility probes

Revision ID: 0019_probes
Revises: 0018_ensembles
Create Date: 2026-11-26 22:00:00

Optional prices per million input and output tokens on each judge (existing judges: unknown).
Probe answers get tables of their own, so that they can never be read as labels of real pairs.
"""

import sqlalchemy as sa
from alembic import op

revision = "0019_probes"
down_revision = "0018_ensembles"
branch_labels = None
depends_on = None


def upgrade():
    # In place on SQLite: recreating the table would cascade-delete the rows that refer to it.
    with op.batch_alter_table("judge", recreate="never") as batch_op:
        batch_op.add_column(sa.Column("input_price", sa.Double(), nullable=True))
        batch_op.add_column(sa.Column("output_price", sa.Double(), nullable=True))
    op.create_table(
        "judge_probe",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        sa.Column("judge_id", sa.Integer(), nullable=False),
        sa.Column("prompt_sha256", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("pairs", sa.Integer(), nullable=False),
        sa.Column("zero_pairs", sa.Integer(), nullable=False),
        sa.Column("threshold", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["judge_id"],
            ["judge.id"],
            name=op.f("fk_judge_probe_judge_id_judge"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["prompt_sha256"],
            ["prompt_version.sha256"],
            name=op.f("fk_judge_probe_prompt_sha256_prompt_version"),
        ),
        sa.ForeignKeyConstraint(
            ["test_set_id"],
            ["test_set.id"],
            name=op.f("fk_judge_probe_test_set_id_test_set"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judge_probe")),
    )
    with op.batch_alter_table("judge_probe", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_judge_probe_judge_id"), ["judge_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_judge_probe_test_set_id"), ["test_set_id"], unique=False
        )
    op.create_table(
        "judge_probe_answer",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("probe_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("chunk_id", sa.Integer(), nullable=False),
        sa.Column("variant", sa.String(length=16), nullable=False),
        sa.Column("form", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("grade", sa.Integer(), nullable=True),
        sa.Column("raw_answer", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["chunk_id"],
            ["chunk.id"],
            name=op.f("fk_judge_probe_answer_chunk_id_chunk"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["probe_id"],
            ["judge_probe.id"],
            name=op.f("fk_judge_probe_answer_probe_id_judge_probe"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["query_id"],
            ["query.id"],
            name=op.f("fk_judge_probe_answer_query_id_query"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judge_probe_answer")),
    )
    with op.batch_alter_table("judge_probe_answer", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_judge_probe_answer_probe_id"), ["probe_id"], unique=False
        )


def downgrade():
    with op.batch_alter_table("judge_probe_answer", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_judge_probe_answer_probe_id"))
    op.drop_table("judge_probe_answer")
    with op.batch_alter_table("judge_probe", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_judge_probe_test_set_id"))
        batch_op.drop_index(batch_op.f("ix_judge_probe_judge_id"))
    op.drop_table("judge_probe")
    # In place on SQLite: recreating the table would cascade-delete the rows that refer to it.
    with op.batch_alter_table("judge", recreate="never") as batch_op:
        batch_op.drop_column("output_price")
        batch_op.drop_column("input_price")
