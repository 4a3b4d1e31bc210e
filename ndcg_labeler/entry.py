"""The app as a process that serves or runs commands builds it (app.py, gunicorn, ndcg-labeler)."""

from __future__ import annotations

import atexit

from flask import Flask

from ndcg_labeler import runtime


def make_app() -> Flask:
    """Set the runtime knobs, build the app, and close its pooled connections at exit.

    The knobs come first: create_app's imports load numpy and pyarrow, which read them once.
    """
    runtime.apply()
    from ndcg_labeler.factory import create_app

    app = create_app()
    atexit.register(close_connections, app)
    return app


def close_connections(app: Flask) -> None:
    """Close the process's pooled database connections when it exits.

    SQLite copies its write-ahead log into the database file (and removes the log) only when
    the last connection closes: until then a command's writes are in the `-wal` file beside
    the database, and a copy of the database file alone misses them. The interpreter's
    teardown closes them too, as it collects them; this does not depend on it.
    """
    from ndcg_labeler.extensions import db

    with app.app_context():
        for engine in db.engines.values():
            engine.dispose()
