"""The schema exists only through migrations: empty -> head works and matches the models."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask import Flask
from flask_migrate import downgrade, upgrade

from ndcg_labeler.extensions import db
from ndcg_labeler.models import FiguresCache
from ndcg_labeler.models.testsets import search_objects
from tests.factory import build_test_set


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


def test_the_figures_cache_rename_keeps_its_rows_both_ways(app: Flask) -> None:
    """0011 renames team_cache to figures_cache, its constraints with it, and keeps the rows."""
    row = {"kind": "people", "options": "", "version": "1", "payload": "null"}
    with app.app_context():
        test_set_id = build_test_set("renamed", {"q1": "one"}).id
        db.session.commit()  # migrations wait for every open transaction on PostgreSQL
        downgrade(revision="0010_chunk_search")
        db.session.execute(
            sa.text(
                "INSERT INTO team_cache (test_set_id, kind, options, version, payload, "
                "computed_at) VALUES (:test_set_id, :kind, :options, :version, :payload, "
                "CURRENT_TIMESTAMP)"
            ),
            {"test_set_id": test_set_id, **row},
        )
        db.session.commit()
        upgrade()
        assert db.session.scalars(sa.select(FiguresCache.kind)).all() == ["people"]
        inspector = db.inspect(db.engine)
        assert "team_cache" not in inspector.get_table_names()
        assert inspector.get_pk_constraint("figures_cache")["name"] == "pk_figures_cache"
        assert [fk["name"] for fk in inspector.get_foreign_keys("figures_cache")] == [
            "fk_figures_cache_test_set_id_test_set"
        ]
        assert [uq["name"] for uq in inspector.get_unique_constraints("figures_cache")] == [
            "uq_figures_cache_test_set_id_kind_options"
        ]
        db.session.commit()
        downgrade(revision="0010_chunk_search")
        kinds = db.session.execute(sa.text("SELECT kind FROM team_cache")).scalars().all()
        assert kinds == ["people"]
        db.session.commit()
        upgrade()
    assert _diff(app) == []


def test_existing_users_get_their_own_session_token(app: Flask) -> None:
    """0012 gives every user a random token of their own, then makes the column required."""
    with app.app_context():
        downgrade(revision="0011_figures_cache")
        for name in ("ann", "bob"):
            db.session.execute(
                sa.text(
                    'INSERT INTO "user" (username, role, active, shortcuts_enabled, created_at) '
                    "VALUES (:name, 'annotator', :yes, :yes, CURRENT_TIMESTAMP)"
                ),
                {"name": name, "yes": True},
            )
        db.session.commit()
        upgrade()
        tokens = db.session.execute(sa.text('SELECT session_token FROM "user"')).scalars().all()
        assert len(tokens) == 2 and len(set(tokens)) == 2
        assert all(len(token) >= 32 for token in tokens)
        db.session.commit()
    assert _diff(app) == []
