"""figures_cache: the team_cache table renamed for what it holds (team pages, compare statistics)

Revision ID: 0011_figures_cache
Revises: 0010_chunk_search
Create Date: 2026-11-26 16:50:00

The table, its primary key, foreign key and unique constraint (and, on PostgreSQL, its id
sequence) take the new name under the naming convention (extensions.NAMING_CONVENTION); the
rows are kept. PostgreSQL renames in place. SQLite keeps constraint names in the table's
CREATE statement, so the renamed table is rebuilt from the definition below (a batch copy).
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_figures_cache"
down_revision = "0010_chunk_search"
branch_labels = None
depends_on = None

OLD = "team_cache"
NEW = "figures_cache"
# Constraint names under the naming convention, as (prefix, suffix) around the table name.
CONSTRAINTS = (("pk", ""), ("fk", "_test_set_id_test_set"), ("uq", "_test_set_id_kind_options"))


def _table(name: str) -> sa.Table:
    """The table as the models define it, its constraints named for `name`."""
    return sa.Table(
        name,
        sa.MetaData(),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("test_set_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("options", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=200), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("refreshing_since", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["test_set_id"],
            ["test_set.id"],
            name=f"fk_{name}_test_set_id_test_set",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=f"pk_{name}"),
        sa.UniqueConstraint(
            "test_set_id", "kind", "options", name=f"uq_{name}_test_set_id_kind_options"
        ),
    )


def _rename(old: str, new: str) -> None:
    op.rename_table(old, new)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER SEQUENCE IF EXISTS {old}_id_seq RENAME TO {new}_id_seq")
        for prefix, suffix in CONSTRAINTS:
            was, now = f"{prefix}_{old}{suffix}", f"{prefix}_{new}{suffix}"
            op.execute(f"ALTER TABLE {new} RENAME CONSTRAINT {was} TO {now}")
    else:
        with op.batch_alter_table(new, recreate="always", copy_from=_table(new)):
            pass


def upgrade():
    _rename(OLD, NEW)


def downgrade():
    _rename(NEW, OLD)
