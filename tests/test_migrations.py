"""The schema exists only through migrations: empty -> head works and matches the models."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask import Flask
from flask_migrate import downgrade, upgrade

from ndcg_labeler.extensions import db
from ndcg_labeler.models.testsets import search_objects


def _diff(app: Flask) -> list:
    with app.app_context(), db.engine.connect() as conn:
        # As migrations/env.py: the full-text search objects are the migrations' own.
        opts = {"compare_type": True, "include_object": search_objects}
        context = MigrationContext.configure(conn, opts=opts)
        return compare_metadata(context, db.metadata)


def test_head_matches_models(app: Flask) -> None:
    """The `app` fixture upgraded an empty database to head; autogenerate finds nothing."""
    assert _diff(app) == []


def test_downgrade_to_base_and_upgrade_again(app: Flask) -> None:
    with app.app_context():
        downgrade(revision="base")
        assert db.inspect(db.engine).get_table_names() == ["alembic_version"]
        upgrade()
    assert _diff(app) == []


def test_chunk_search_objects_exist_and_follow_the_chunks(app: Flask) -> None:
    """What include_object leaves out is really there (and kept in step on SQLite)."""
    with app.app_context():
        inspector = db.inspect(db.engine)
        if db.engine.dialect.name == "sqlite":
            assert "chunk_fts" in inspector.get_table_names()
        else:
            assert "ix_chunk_search" in {i["name"] for i in inspector.get_indexes("chunk")}
