"""Alembic environment, driven by Flask-Migrate and the app's own engine."""

import logging
from logging.config import fileConfig

from alembic import context
from flask import current_app

config = context.config
# Keep the app's logging intact when migrations run inside tests or `flask db upgrade`.
if config.config_file_name is not None and not logging.getLogger().handlers:
    fileConfig(config.config_file_name, disable_existing_loggers=False)
logger = logging.getLogger("alembic.env")


def get_engine():
    """The app's engine (Flask-SQLAlchemy 3: `db.engine`, never the deprecated get_engine())."""
    return current_app.extensions["migrate"].db.engine


config.set_main_option(
    "sqlalchemy.url", get_engine().url.render_as_string(hide_password=False).replace("%", "%%")
)
target_db = current_app.extensions["migrate"].db


def get_metadata():
    """The declarative metadata that autogenerate compares against."""
    return target_db.metadata


def run_migrations_offline():
    """Emit SQL for the configured URL without connecting."""
    url = config.get_main_option("sqlalchemy.url")
    context.configure(url=url, target_metadata=get_metadata(), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online():
    """Run migrations on a live connection; skip empty autogenerate revisions."""

    def process_revision_directives(context, revision, directives):
        if getattr(config.cmd_opts, "autogenerate", False):
            script = directives[0]
            if script.upgrade_ops.is_empty():
                directives[:] = []
                logger.info("No changes in schema detected.")

    conf_args = dict(current_app.extensions["migrate"].configure_args)
    conf_args.setdefault("process_revision_directives", process_revision_directives)
    # SQLite cannot ALTER most things in place: batch mode recreates tables instead.
    conf_args.setdefault("render_as_batch", True)
    conf_args.setdefault("compare_type", True)
    # Full-text search objects are made by migrations, not the models (0010_chunk_search).
    from ndcg_labeler.models.testsets import search_objects

    conf_args.setdefault("include_object", search_objects)

    from ndcg_labeler.sqlite import foreign_keys_off

    with get_engine().connect() as connection, foreign_keys_off(connection):
        context.configure(connection=connection, target_metadata=get_metadata(), **conf_args)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
