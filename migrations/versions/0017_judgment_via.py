"""judgment.via: whether a judgment's last change came from the queue or a drill-down

Revision ID: 0017_judgment_via
Revises: 0016_judge_archived_at
Create Date: 2026-11-26 19:40:00

A grade given in a run's drill-down is given beside the ranking and the current grades: a
correction, not an independent pass, so the agreement figures leave it out. Existing
judgments keep counting as they did ("queue").
"""

import sqlalchemy as sa
from alembic import op

revision = "0017_judgment_via"
down_revision = "0016_judge_archived_at"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("judgment") as batch_op:
        batch_op.add_column(
            sa.Column("via", sa.String(length=16), server_default="queue", nullable=False)
        )


def downgrade():
    with op.batch_alter_table("judgment") as batch_op:
        batch_op.drop_column("via")
