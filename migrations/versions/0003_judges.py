"""machine judges

Revision ID: 0003_judges
Revises: 0002_run_score
Create Date: 2026-11-22 23:33:45.371759

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0003_judges"
down_revision = "0002_run_score"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "judge",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("base_url", sa.String(length=500), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("api_key_env", sa.String(length=100), nullable=False),
        sa.Column("temperature", sa.Double(), nullable=False),
        sa.Column("max_tokens", sa.Integer(), nullable=False),
        sa.Column("timeout", sa.Double(), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("requests_per_minute", sa.Integer(), nullable=False),
        sa.Column("prompt_template", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judge")),
        sa.UniqueConstraint("name", name=op.f("uq_judge_name")),
    )
    op.create_table(
        "prompt_version",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("template", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("sha256", name=op.f("pk_prompt_version")),
    )
    op.create_table(
        "machine_judgment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("chunk_id", sa.Integer(), nullable=False),
        sa.Column("judge_id", sa.Integer(), nullable=False),
        sa.Column("prompt_sha256", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("grade", sa.Integer(), nullable=True),
        sa.Column("raw_answer", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "(status = 'labeled' AND grade IS NOT NULL) OR (status <> 'labeled' AND grade IS NULL)",
            name=op.f("ck_machine_judgment_grade_matches_status"),
        ),
        sa.ForeignKeyConstraint(
            ["chunk_id"],
            ["chunk.id"],
            name=op.f("fk_machine_judgment_chunk_id_chunk"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["judge_id"],
            ["judge.id"],
            name=op.f("fk_machine_judgment_judge_id_judge"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["prompt_sha256"],
            ["prompt_version.sha256"],
            name=op.f("fk_machine_judgment_prompt_sha256_prompt_version"),
        ),
        sa.ForeignKeyConstraint(
            ["query_id"],
            ["query.id"],
            name=op.f("fk_machine_judgment_query_id_query"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["test_set_id"],
            ["test_set.id"],
            name=op.f("fk_machine_judgment_test_set_id_test_set"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_machine_judgment")),
        sa.UniqueConstraint(
            "query_id",
            "chunk_id",
            "judge_id",
            "prompt_sha256",
            name=op.f("uq_machine_judgment_query_id_chunk_id_judge_id_prompt_sha256"),
        ),
    )
    with op.batch_alter_table("machine_judgment", schema=None) as batch_op:
        batch_op.create_index(
            "ix_machine_judgment_judge_id_test_set_id", ["judge_id", "test_set_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_machine_judgment_test_set_id"), ["test_set_id"], unique=False
        )

    with op.batch_alter_table("test_set", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "show_machine_suggestions", sa.Boolean(), nullable=False, server_default=sa.false()
            )
        )


def downgrade():
    with op.batch_alter_table("test_set", schema=None) as batch_op:
        batch_op.drop_column("show_machine_suggestions")

    with op.batch_alter_table("machine_judgment", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_machine_judgment_test_set_id"))
        batch_op.drop_index("ix_machine_judgment_judge_id_test_set_id")

    op.drop_table("machine_judgment")
    op.drop_table("prompt_version")
    op.drop_table("judge")
