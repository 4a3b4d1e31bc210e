"""counters: stored per-pair, per-test-set and per-annotator counts; team page cache

Revision ID: 0005_counters
Revises: 0004_jobs
Create Date: 2026-11-24 10:00:00

Adds the counters the labeling queue and progress read in O(1) (pair.answers, pair.grades,
pool_tally, annotator_tally), fills them from the judgments already stored, and adds the
team_cache table (agreement, people and policies figures per labels version).
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_counters"
down_revision = "0004_jobs"
branch_labels = None
depends_on = None

_COUNTED = "j.status IN ('graded', 'cant_tell') AND u.role <> 'import'"
_LEVEL = "CASE WHEN p.answers > 5 THEN 5 ELSE p.answers END"

# The same definitions as services/tallies/counters.py, written out in SQL so that the migration
# does not depend on application code that may change later.
BACKFILL = [
    f"""UPDATE pair SET
        answers = (SELECT count(*) FROM judgment j JOIN "user" u ON u.id = j.annotator_id
                   WHERE j.query_id = pair.query_id AND j.chunk_id = pair.chunk_id
                   AND {_COUNTED}),
        grades = (SELECT count(*) FROM judgment j
                  WHERE j.query_id = pair.query_id AND j.chunk_id = pair.chunk_id
                  AND j.status = 'graded')""",
    """INSERT INTO pool_tally (test_set_id, level_0, level_1, level_2, level_3, level_4,
                               level_5, graded_pairs, graded_judgments)
       SELECT t.id,
         (SELECT count(*) FROM pair p WHERE p.test_set_id = t.id AND p.answers = 0),
         (SELECT count(*) FROM pair p WHERE p.test_set_id = t.id AND p.answers = 1),
         (SELECT count(*) FROM pair p WHERE p.test_set_id = t.id AND p.answers = 2),
         (SELECT count(*) FROM pair p WHERE p.test_set_id = t.id AND p.answers = 3),
         (SELECT count(*) FROM pair p WHERE p.test_set_id = t.id AND p.answers = 4),
         (SELECT count(*) FROM pair p WHERE p.test_set_id = t.id AND p.answers >= 5),
         (SELECT count(*) FROM pair p WHERE p.test_set_id = t.id AND p.grades > 0),
         (SELECT count(*) FROM judgment j WHERE j.test_set_id = t.id AND j.status = 'graded')
       FROM test_set t""",
    f"""INSERT INTO annotator_tally (test_set_id, user_id, mine_1, mine_2, mine_3, mine_4,
                                    mine_5, skipped)
       SELECT p.test_set_id, j.annotator_id,
         sum(CASE WHEN {_COUNTED} AND {_LEVEL} = 1 THEN 1 ELSE 0 END),
         sum(CASE WHEN {_COUNTED} AND {_LEVEL} = 2 THEN 1 ELSE 0 END),
         sum(CASE WHEN {_COUNTED} AND {_LEVEL} = 3 THEN 1 ELSE 0 END),
         sum(CASE WHEN {_COUNTED} AND {_LEVEL} = 4 THEN 1 ELSE 0 END),
         sum(CASE WHEN {_COUNTED} AND {_LEVEL} = 5 THEN 1 ELSE 0 END),
         sum(CASE WHEN j.status = 'skipped' THEN 1 ELSE 0 END)
       FROM judgment j
       JOIN pair p ON p.query_id = j.query_id AND p.chunk_id = j.chunk_id
       JOIN "user" u ON u.id = j.annotator_id
       WHERE u.role <> 'import'
       GROUP BY p.test_set_id, j.annotator_id""",
]


def upgrade():
    with op.batch_alter_table("pair", schema=None) as batch_op:
        batch_op.add_column(sa.Column("answers", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("grades", sa.Integer(), server_default="0", nullable=False))
        batch_op.create_index(
            "ix_pair_queue", ["test_set_id", "answers", "query_id", "id"], unique=False
        )
        batch_op.create_index(
            "ix_pair_query_id_priority", ["query_id", "priority", "id"], unique=False
        )
    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.create_index(
            "ix_judgment_annotator_recent",
            ["annotator_id", "test_set_id", "updated_at", "id"],
            unique=False,
        )
    counters = [
        sa.Column(name, sa.Integer(), server_default="0", nullable=False)
        for name in (
            "level_0",
            "level_1",
            "level_2",
            "level_3",
            "level_4",
            "level_5",
            "graded_pairs",
            "graded_judgments",
        )
    ]
    op.create_table(
        "pool_tally",
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        *counters,
        sa.ForeignKeyConstraint(
            ["test_set_id"],
            ["test_set.id"],
            name=op.f("fk_pool_tally_test_set_id_test_set"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("test_set_id", name=op.f("pk_pool_tally")),
    )
    mine = [
        sa.Column(name, sa.Integer(), server_default="0", nullable=False)
        for name in ("mine_1", "mine_2", "mine_3", "mine_4", "mine_5", "skipped")
    ]
    op.create_table(
        "annotator_tally",
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        *mine,
        sa.ForeignKeyConstraint(
            ["test_set_id"],
            ["test_set.id"],
            name=op.f("fk_annotator_tally_test_set_id_test_set"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user.id"],
            name=op.f("fk_annotator_tally_user_id_user"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("test_set_id", "user_id", name=op.f("pk_annotator_tally")),
    )
    op.create_table(
        "team_cache",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("options", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=200), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("refreshing_since", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["test_set_id"],
            ["test_set.id"],
            name=op.f("fk_team_cache_test_set_id_test_set"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_team_cache")),
        sa.UniqueConstraint(
            "test_set_id", "kind", "options", name=op.f("uq_team_cache_test_set_id_kind_options")
        ),
    )
    for statement in BACKFILL:
        op.execute(statement)


def downgrade():
    op.drop_table("team_cache")
    op.drop_table("annotator_tally")
    op.drop_table("pool_tally")
    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.drop_index("ix_judgment_annotator_recent")
    with op.batch_alter_table("pair", schema=None) as batch_op:
        batch_op.drop_index("ix_pair_query_id_priority")
        batch_op.drop_index("ix_pair_queue")
        batch_op.drop_column("grades")
        batch_op.drop_column("answers")
