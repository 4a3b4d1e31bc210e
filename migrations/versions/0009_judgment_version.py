"""judgment.version: optimistic concurrency for grading forms (no silent overwrite)

Revision ID: 0009_judgment_version
Revises: 0008_natural_order
Create Date: 2026-11-23 04:40:00

Existing judgments start at version 1; every change bumps it in the same UPDATE.
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_judgment_version"
down_revision = "0008_natural_order"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("judgment") as batch_op:
        batch_op.add_column(sa.Column("version", sa.Integer(), server_default="1", nullable=False))


def downgrade():
    with op.batch_alter_table("judgment") as batch_op:
        batch_op.drop_column("version")
