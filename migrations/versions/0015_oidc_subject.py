"""user.oidc_issuer/oidc_subject: who a person is at the identity provider (single sign-on)

Revision ID: 0015_oidc_subject
Revises: 0014_queue_priority
Create Date: 2026-11-26 19:20:00

A person created by their first single sign-on is found again by the ID token's issuer and
subject, never by name or e-mail (those can change, or be claimed by someone else).
"""

import sqlalchemy as sa
from alembic import op

revision = "0015_oidc_subject"
down_revision = "0014_queue_priority"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("user") as batch_op:
        batch_op.add_column(sa.Column("oidc_issuer", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("oidc_subject", sa.String(length=255), nullable=True))
        batch_op.create_unique_constraint(
            op.f("uq_user_oidc_issuer_oidc_subject"), ["oidc_issuer", "oidc_subject"]
        )


def downgrade():
    with op.batch_alter_table("user") as batch_op:
        batch_op.drop_constraint(op.f("uq_user_oidc_issuer_oidc_subject"), type_="unique")
        batch_op.drop_column("oidc_subject")
        batch_op.drop_column("oidc_issuer")
