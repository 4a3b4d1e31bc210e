"""INSERT ... ON CONFLICT DO NOTHING on SQLite and PostgreSQL alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from ndcg_labeler.extensions import db


def insert_if_absent(
    table: sa.Table, rows: Sequence[dict[str, Any]], keys: Sequence[str]
) -> list[int]:
    """Insert the rows whose unique `keys` are not taken yet; returns the new rows' ids.

    Race-safe without a prior SELECT: a row inserted meanwhile by another transaction is simply
    skipped. RETURNING rather than rowcount, since psycopg reports -1 for INSERT ... RETURNING.
    """
    dialect = db.session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = (
        insert(table)
        .values(list(rows))
        .on_conflict_do_nothing(index_elements=list(keys))
        .returning(table.c.id)
    )
    return list(db.session.execute(stmt).scalars())
