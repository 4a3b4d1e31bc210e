"""corpus_source: the corpus files --only-referenced imports read, to fetch the rest later

Revision ID: 0023_fetchlater
Revises: 0022_corpora
Create Date: 2026-11-26 23:40:00

An import that keeps only the referenced chunks remembers the file it read (its absolute path,
size and sha256; no path for an uploaded file), so that a run naming a left-out chunk later
fetches it from the same file while it is unchanged, or says which docids are missing.
"""

import sqlalchemy as sa
from alembic import op

revision = "0023_fetchlater"
down_revision = "0022_corpora"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "corpus_source",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        sa.Column("filename", sa.String(length=300), nullable=False),
        sa.Column("path", sa.String(length=4096), nullable=True),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.Column("sha256", sa.String(length=64), nullable=True),
        sa.Column("left_out", sa.BigInteger(), nullable=False),
        sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["test_set_id"],
            ["test_set.id"],
            name=op.f("fk_corpus_source_test_set_id_test_set"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_corpus_source")),
    )
    op.create_index(
        op.f("ix_corpus_source_test_set_id"), "corpus_source", ["test_set_id"], unique=False
    )


def downgrade():
    op.drop_index(op.f("ix_corpus_source_test_set_id"), table_name="corpus_source")
    op.drop_table("corpus_source")
