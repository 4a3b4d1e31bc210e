"""full-text search of chunks: SQLite FTS5 (external content, kept by triggers), PostgreSQL GIN

Revision ID: 0010_chunk_search
Revises: 0009_judgment_version
Create Date: 2026-11-23 04:50:00

The chunk list searches titles and texts by words (each a prefix) instead of scanning every
text with LIKE. SQLite: the FTS5 table `chunk_fts` indexes chunk.title and chunk.text, rows
kept in step by three triggers (a later batch migration that recreates `chunk` must recreate
them). PostgreSQL: a GIN index on the 'simple' tsvector of title and text. Neither is in the
models; migrations/env.py and the migration test leave them out of autogenerate's comparison
(models.search_objects).
"""

from alembic import op

revision = "0010_chunk_search"
down_revision = "0009_judgment_version"
branch_labels = None
depends_on = None

_SQLITE_UP = (
    "CREATE VIRTUAL TABLE chunk_fts USING fts5(title, text, content='chunk', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER chunk_fts_ai AFTER INSERT ON chunk BEGIN "
    "INSERT INTO chunk_fts(rowid, title, text) VALUES (new.id, new.title, new.text); END",
    "CREATE TRIGGER chunk_fts_ad AFTER DELETE ON chunk BEGIN "
    "INSERT INTO chunk_fts(chunk_fts, rowid, title, text) "
    "VALUES ('delete', old.id, old.title, old.text); END",
    "CREATE TRIGGER chunk_fts_au AFTER UPDATE OF title, text ON chunk BEGIN "
    "INSERT INTO chunk_fts(chunk_fts, rowid, title, text) "
    "VALUES ('delete', old.id, old.title, old.text); "
    "INSERT INTO chunk_fts(rowid, title, text) VALUES (new.id, new.title, new.text); END",
    "INSERT INTO chunk_fts(chunk_fts) VALUES ('rebuild')",
)
_SQLITE_DOWN = (
    "DROP TRIGGER IF EXISTS chunk_fts_au",
    "DROP TRIGGER IF EXISTS chunk_fts_ad",
    "DROP TRIGGER IF EXISTS chunk_fts_ai",
    "DROP TABLE IF EXISTS chunk_fts",
)
_PG_UP = (
    "CREATE INDEX ix_chunk_search ON chunk USING gin "
    "(to_tsvector('simple', coalesce(title, '') || ' ' || coalesce(text, '')))",
)
_PG_DOWN = ("DROP INDEX IF EXISTS ix_chunk_search",)


def _run(sqlite, postgresql):
    name = op.get_bind().dialect.name
    for statement in {"sqlite": sqlite, "postgresql": postgresql}.get(name, ()):
        op.execute(statement)


def upgrade():
    _run(_SQLITE_UP, _PG_UP)


def downgrade():
    _run(_SQLITE_DOWN, _PG_DOWN)
