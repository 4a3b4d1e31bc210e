"""pool_tally.graded_outside: pairs outside the pool with a grade, shown beside progress

Revision ID: 0027_graded_outside
Revises: 0026_check_endpoint
Create Date: 2026-11-28 12:00:00

A grade given in place (drill-down, compare page, `flask label`) to a chunk the pool lacks
counts in scores but in no pool figure, so progress looked stuck though people graded. The
counter is filled from the judgments already stored, with the definition of
services/tallies/counters.py written out in SQL.
"""

import sqlalchemy as sa
from alembic import op

revision = "0027_graded_outside"
down_revision = "0026_check_endpoint"
branch_labels = None
depends_on = None

# Each such pair counted once: by its graded judgment with the lowest id.
BACKFILL = """UPDATE pool_tally SET graded_outside = (
    SELECT count(*) FROM judgment j
    WHERE j.test_set_id = pool_tally.test_set_id AND j.status = 'graded'
    AND NOT EXISTS (SELECT 1 FROM pair p WHERE p.query_id = j.query_id AND p.chunk_id = j.chunk_id)
    AND NOT EXISTS (SELECT 1 FROM judgment k
                    WHERE k.query_id = j.query_id AND k.chunk_id = j.chunk_id
                    AND k.status = 'graded' AND k.id < j.id)
)"""


def upgrade() -> None:
    """Add the counter and fill it."""
    with op.batch_alter_table("pool_tally") as batch:
        batch.add_column(
            sa.Column("graded_outside", sa.Integer(), server_default="0", nullable=False)
        )
    op.execute(BACKFILL)


def downgrade() -> None:
    """Drop the counter."""
    with op.batch_alter_table("pool_tally") as batch:
        batch.drop_column("graded_outside")
