"""ix_pair_queue: answers, then priority, then query: the queue's order across queries

Revision ID: 0014_queue_priority
Revises: 0013_audit_sample
Create Date: 2026-11-26 19:30:00

The labeling queue now starts the query holding the open pair of lowest priority (among those
with the fewest answers) instead of the first query in import order, so that a pool made for
a comparison (`flask pool SET --for-compare A B`) is labeled in its weight order. The index
walks pairs in that order, so finding the next pair stays one index range scan.
"""

from alembic import op

revision = "0014_queue_priority"
down_revision = "0013_audit_sample"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("pair") as batch_op:
        batch_op.drop_index("ix_pair_queue")
        batch_op.create_index(
            "ix_pair_queue", ["test_set_id", "answers", "priority", "query_id", "id"], unique=False
        )


def downgrade():
    with op.batch_alter_table("pair") as batch_op:
        batch_op.drop_index("ix_pair_queue")
        batch_op.create_index(
            "ix_pair_queue", ["test_set_id", "answers", "query_id", "id"], unique=False
        )
