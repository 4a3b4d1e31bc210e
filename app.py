"""Entry point: `flask --app app ...` and `gunicorn app:app`."""

import atexit

from ndcg_labeler import runtime
from ndcg_labeler.extensions import db
from ndcg_labeler.factory import create_app

runtime.apply()  # before create_app: its imports load numpy and pyarrow, which read the knobs
app = create_app()


@atexit.register
def close_connections() -> None:
    """Close the process's pooled database connections when it exits.

    SQLite copies its write-ahead log into the database file (and removes the log) only when
    the last connection closes: until then a command's writes are in the `-wal` file beside
    the database, and a copy of the database file alone misses them. The interpreter's
    teardown closes them too, as it collects them; this does not depend on it.
    """
    with app.app_context():
        for engine in db.engines.values():
            engine.dispose()
