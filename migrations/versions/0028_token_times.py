"""user.api_token_created_at and api_token_used_at: when a personal API token was made and used

Revision ID: 0028_token_times
Revises: 0027_graded_outside
Create Date: 2026-11-28 13:00:00

An admin looking for tokens nobody uses any more, or for one used after it should have been
retired, had no time to go by. Tokens made before this revision have neither time (null),
shown as "created before times were kept".
"""

import sqlalchemy as sa
from alembic import op

revision = "0028_token_times"
down_revision = "0027_graded_outside"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the two times."""
    with op.batch_alter_table("user") as batch:
        batch.add_column(sa.Column("api_token_created_at", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("api_token_used_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    """Drop them."""
    with op.batch_alter_table("user") as batch:
        batch.drop_column("api_token_used_at")
        batch.drop_column("api_token_created_at")
