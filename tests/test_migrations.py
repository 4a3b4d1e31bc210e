"""The schema exists only through migrations: empty -> head works and matches the models."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask import Flask
from flask_migrate import downgrade, upgrade

from ndcg_labeler.extensions import db


def _diff(app: Flask) -> list:
    with app.app_context(), db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
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
