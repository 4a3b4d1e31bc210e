"""audit_event: indexes for /audit's action and actor filters, newest first

Revision ID: 0029_audit_filters
Revises: 0028_token_times
Create Date: 2026-11-27 23:00:00

With sign-ins audited, a year of a team is ~500,000 events. Filtering by action sorted every
event of that action (400,000 sign-ins), filtering by actor and the actor menu's distinct names
read the whole table. (action, created_at, id) and (actor_name, created_at, id) give both
filters their newest-first order without a sort; the first replaces the index on action alone,
which is its prefix.
"""

from alembic import op

revision = "0029_audit_filters"
down_revision = "0028_token_times"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the two indexes; drop the one on action, their prefix."""
    with op.batch_alter_table("audit_event") as batch:
        batch.create_index(
            "ix_audit_event_action_created_at", ["action", "created_at", "id"], unique=False
        )
        batch.create_index(
            "ix_audit_event_actor_name_created_at",
            ["actor_name", "created_at", "id"],
            unique=False,
        )
        batch.drop_index("ix_audit_event_action")


def downgrade() -> None:
    """Back to the index on action alone."""
    with op.batch_alter_table("audit_event") as batch:
        batch.create_index("ix_audit_event_action", ["action"], unique=False)
        batch.drop_index("ix_audit_event_actor_name_created_at")
        batch.drop_index("ix_audit_event_action_created_at")
