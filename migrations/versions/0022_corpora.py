"""job_file: spooled job inputs in the database, so workers need no shared disk

Revision ID: 0022_corpora
Revises: 0021_manyruns
Create Date: 2026-11-26 22:10:00

A web server used to spool an upload under its instance/uploads/ folder and the job worker read
it there, so both had to share that disk. The parts of each spooled file now go into job_file
(1 MiB each), deleted when the job ends: web servers and workers need only the database and
the queue.
"""

import sqlalchemy as sa
from alembic import op

revision = "0022_corpora"
down_revision = "0021_manyruns"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "job_file",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=40), nullable=False),
        sa.Column("field", sa.String(length=32), nullable=False),
        sa.Column("filename", sa.String(length=300), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_file")),
        sa.UniqueConstraint("token", "field", "seq", name=op.f("uq_job_file_token_field_seq")),
    )


def downgrade():
    op.drop_table("job_file")
