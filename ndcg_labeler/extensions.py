"""The database layer's Flask extensions: Flask-SQLAlchemy and (on first need) Flask-Migrate.

The web-only ones (CSRF, login) are in `web_extensions`: commands do not import them.
"""

from __future__ import annotations

from flask import Flask
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import MetaData, event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.pool import Pool

from ndcg_labeler import paths
from ndcg_labeler.sqlite import on_checkin, on_connect

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base whose metadata names every constraint predictably."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


db = SQLAlchemy(model_class=Base)
MIGRATIONS = paths.data_folder("migrations")


def ensure_migrate(app: Flask) -> None:
    """Attach Flask-Migrate (on first need: importing Alembic costs about 0.4 s of start-up).

    `flask db ...`, the tests and the benchmarks call it; plain requests never need it.
    """
    if "migrate" not in app.extensions:
        from flask_migrate import Migrate

        Migrate(app, db, directory=str(MIGRATIONS))


# SQLite's settings for every connection, and its automatic checkpoints given back in the pool.
event.listen(Engine, "connect", on_connect)
event.listen(Pool, "checkin", on_checkin)
