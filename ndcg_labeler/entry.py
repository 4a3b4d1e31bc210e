"""The app as a process that serves or runs commands builds it (app.py, gunicorn, ndcg-labeler).

A server builds the web layer (views, forms, login...) with the app, before its first request.
A command-line process builds it only if something reads the routes (ndcg_labeler.factory): the
command line's entry says so by calling `commands_first()` before the app loads, and
the development server, which serves, takes it back with `web_at_start()`.

A command-line process also pauses the cyclic garbage collector from `commands_first()` until
the app is built: while the modules and mapped classes load, it ran ~240 collections over the
growing heap and freed ~800 of ~97,000 objects (the rest live as long as the process), about a
tenth of `flask run list`'s CPU time. They are then frozen (later collections skip them) and
collection resumes.
"""

from __future__ import annotations

import atexit
import gc

from flask import Flask

from ndcg_labeler import runtime

# Whether the app this process builds attaches its web layer at once; see the docstring.
_web_now = True
# Whether commands_first() paused the collector (make_app resumes it).
_gc_paused = False


def commands_first() -> None:
    """This process runs a command: the web layer on first need, no collection until the app."""
    global _web_now, _gc_paused
    _web_now = False
    if gc.isenabled():
        gc.disable()
        _gc_paused = True


def web_at_start() -> None:
    """This process serves after all (`flask run`): build the web layer with the app."""
    global _web_now
    _web_now = True


def make_app() -> Flask:
    """Set the runtime knobs, build the app, and close its pooled connections at exit.

    The knobs come first: create_app's imports load numpy and pyarrow, which read them once.
    """
    runtime.apply()
    from ndcg_labeler.factory import create_app

    app = create_app(web_now=_web_now)
    atexit.register(close_connections, app)
    _resume_gc()
    return app


def _resume_gc() -> None:
    """Freeze what start-up made and resume the collector, if commands_first() paused it."""
    global _gc_paused
    if _gc_paused:
        gc.freeze()
        gc.enable()
        _gc_paused = False


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
