"""A command-line process builds the web layer on first need, and then it is the whole of it.

`flask ...` builds the app without its pages (views, forms, login, CSRF...: ndcg_labeler.factory)
and attaches them the first time anything reads the URL map's routes. These check that reading
them gives every route a server has, that the first request is served as a server serves it,
that requests meeting the attaching wait for it, and which entry builds which way.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from flask import Flask

from tests.factory import AuthActions, make_app, make_user

ROOT = Path(__file__).resolve().parents[2]


def _command_app(app: Flask, tmp_path: Path) -> Flask:
    """The app as a command process builds it, on the database of `app`."""
    return make_app(tmp_path / "command", app.config["SQLALCHEMY_DATABASE_URI"], web_now=False)


def _routes(app: Flask) -> list[tuple[str, str, tuple[str, ...]]]:
    return sorted(
        (rule.rule, rule.endpoint, tuple(sorted(rule.methods or ())))
        for rule in app.url_map.iter_rules()
    )


def test_reading_the_routes_of_a_command_app_gives_every_route_of_a_server(
    app: Flask, tmp_path: Path
) -> None:
    command = _command_app(app, tmp_path)
    assert set(command.view_functions) == {"static"}  # nothing built before a first need
    routes = _routes(command)
    assert "auth.login" in command.view_functions
    assert len(routes) > 100
    assert routes == _routes(app)


def test_the_first_request_of_a_command_app_is_served_as_a_server_serves_it(
    app: Flask, tmp_path: Path
) -> None:
    command = _command_app(app, tmp_path)
    make_user(command, "admin", role="admin")
    client = command.test_client()
    signed_out = client.get("/")
    assert signed_out.status_code == 302
    assert signed_out.headers["Location"].startswith("/login")
    # The web layer's headers and login came with the routes.
    assert "frame-ancestors 'none'" in signed_out.headers["Content-Security-Policy"]
    assert AuthActions(client).login("admin").status_code == 302
    assert client.get("/").status_code == 200
    assert client.get("/no-such-page").status_code == 404


def test_requests_that_meet_the_web_layer_being_attached_wait_for_it(
    app: Flask, tmp_path: Path
) -> None:
    command = _command_app(app, tmp_path)
    attach = command.url_map.before_first_read
    assert attach is not None
    started, resume = threading.Event(), threading.Event()

    def slow_attach() -> None:
        started.set()
        resume.wait(5)
        attach()

    command.url_map.before_first_read = slow_attach
    first: list[int] = []
    thread = threading.Thread(
        target=lambda: first.append(command.test_client().get("/api/openapi.json").status_code)
    )
    thread.start()
    assert started.wait(5)
    # The second request starts while the first is attaching; let the attaching go on only
    # once it has had time to reach the map (a map read without waiting would 404 at once).
    second: list[int] = []
    waiting = threading.Thread(
        target=lambda: second.append(command.test_client().get("/api/openapi.json").status_code)
    )
    waiting.start()
    waiting.join(0.3)
    resume.set()
    thread.join(10)
    waiting.join(10)
    assert first == [200]
    assert second == [200]


def _views_built(tmp_path: Path, before: str) -> str:
    """Whether `import app` (after `before`) built the views, in a new process."""
    env = {**os.environ, "NDCG_INSTANCE_PATH": str(tmp_path)}
    code = f"{before}\nimport app\nprint('auth.login' in app.app.view_functions)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_command_line_entry_defers_the_pages_and_the_development_server_does_not(
    tmp_path: Path,
) -> None:
    # Every `flask` process loads the `flask run` plugin before the app: the command line's entry.
    plugin = "from ndcg_labeler.cli import run_command"
    assert _views_built(tmp_path, plugin) == "False"
    # `flask run` (serving) takes it back before the app loads, as RunGroup.invoke does.
    serving = f"{plugin}\nfrom ndcg_labeler import entry\nentry.web_at_start()"
    assert _views_built(tmp_path, serving) == "True"
