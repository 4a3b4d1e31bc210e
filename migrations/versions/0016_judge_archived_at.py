"""judge.archived_at: an archived judge is hidden from the label lists, its answers are kept

Revision ID: 0016_judge_archived_at
Revises: 0015_oidc_subject
Create Date: 2026-11-26 19:10:00

NULL for every existing judge (none is archived).
"""

import sqlalchemy as sa
from alembic import op

revision = "0016_judge_archived_at"
down_revision = "0015_oidc_subject"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("judge") as batch_op:
        batch_op.add_column(sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True))


def downgrade():
    with op.batch_alter_table("judge") as batch_op:
        batch_op.drop_column("archived_at")
