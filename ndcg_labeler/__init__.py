"""ndcg-labeler: graded relevance labels and trec_eval-exact NDCG in one web app."""

from __future__ import annotations

import os
import shlex
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from flask import Flask, Response, render_template
from flask.cli import routes_command, shell_command
from flask.ctx import AppContext, RequestContext
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from ndcg_labeler import config

ROOT = Path(__file__).resolve().parent.parent

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)


class LabelerApp(Flask):
    """The Flask app, built in two steps so that a command that needs little imports little.

    `create_app` gives a light app: configuration, security headers and the CLI's stand-ins.
    `attach_database` adds Flask-SQLAlchemy and the models (SQLAlchemy's import is ~0.3 s of
    every process's start-up here); `complete` adds the rest a web request needs (login, CSRF,
    rate limits, blueprints, error pages, template filters). Each happens once, on first need:

    - a request (or a test request context) completes the app before it is matched;
    - one of our commands attaches the database layer before it runs (`cli.LazyCommand`);
    - an app context outside a command line (scripts, tests) or in `flask shell` and
      `flask routes` completes the app.

    `create_app()` completes at once unless asked to defer, as app.py does for the command line.
    """

    _lock = threading.RLock()
    _done: frozenset[str] = frozenset()  # the steps built: "database", "web"
    _building = False  # a step is under way in this thread: a nested call returns at once

    def attach_database(self) -> None:
        """Flask-SQLAlchemy bound to this app, and every model mapped."""
        self._step("database", _attach_database)

    def complete(self) -> None:
        """Everything a web request needs, the database layer included."""
        if "web" in self._done:  # every request asks: no lock once built
            return
        self.attach_database()
        self._step("web", _attach_web)

    def _step(self, name: str, build: Callable[[LabelerApp], None]) -> None:
        """Build a step once; one that fails is not marked done."""
        if name in self._done:
            return
        with self._lock:
            if name in self._done or self._building:
                return
            self._building = True
            try:
                build(self)
                self._done = self._done | {name}
            finally:
                self._building = False

    def request_context(self, environ: dict[str, Any]) -> RequestContext:
        """A request's context (every request and test request), on a complete app."""
        self.complete()
        return super().request_context(environ)

    def app_context(self) -> AppContext:
        """An app context; outside a command line (or in `flask shell|routes`), on a complete app.

        Our commands attach what they need themselves, and the context Flask pushes while it
        looks a command up (for every command `flask --help` lists) needs nothing.
        """
        if "web" not in self._done:
            command = click.get_current_context(silent=True)
            if command is None or command.command in (routes_command, shell_command):
                self.complete()
        return super().app_context()

    def helper_context(self) -> AppContext:
        """An app context for a helper thread of work under way (no click context there): the
        steps already built, nothing more, so that a command's light app stays light."""
        return super().app_context()


def _attach_database(app: Flask) -> None:
    from ndcg_labeler import models  # noqa: F401  (register the mappers)
    from ndcg_labeler.extensions import db

    db.init_app(app)


def _attach_web(app: Flask) -> None:
    from ndcg_labeler import throttle
    from ndcg_labeler.views import register_blueprints
    from ndcg_labeler.web_extensions import csrf, login_manager

    csrf.init_app(app)
    login_manager.init_app(app)
    throttle.init_app(app)
    register_blueprints(app)
    _register_error_pages(app)
    _register_template_helpers(app)


def create_app(test_config: dict[str, Any] | None = None, *, defer: bool = False) -> LabelerApp:
    """Build the app: configuration, CLI, headers; then the rest unless `defer` (see LabelerApp)."""
    instance_path = (test_config or {}).get("INSTANCE_PATH") or os.environ.get(
        "NDCG_INSTANCE_PATH", str(ROOT / "instance")
    )
    app = LabelerApp(
        __name__,
        instance_path=str(instance_path),
        template_folder=str(ROOT / "templates"),
        static_folder=str(ROOT / "static"),
    )
    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    app.config.from_mapping(config.from_environment(app.instance_path))
    if test_config:
        app.config.from_mapping(test_config)
    _apply_deployment(app)

    from ndcg_labeler.cli import register_cli

    register_cli(app)
    _register_headers(app)
    if not defer:
        app.complete()
    return app


def _apply_deployment(app: Flask) -> None:
    """Secure cookies (NDCG_SECURE_COOKIES; on unless debug) and ProxyFix (NDCG_PROXY_FIX=N)."""
    secure = app.config.get("NDCG_SECURE_COOKIES")
    if secure is None:
        secure = not app.debug
    app.config["SESSION_COOKIE_SECURE"] = bool(secure)
    app.config["REMEMBER_COOKIE_SECURE"] = bool(secure)
    proxies = int(app.config.get("NDCG_PROXY_FIX") or 0)
    if proxies > 0:
        # Trust X-Forwarded-For/-Proto/-Host from exactly this many proxies in front of us.
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies
        )


def _register_error_pages(app: Flask) -> None:
    """Render HTTP errors with the site's layout (JSON for the API)."""

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> tuple[Any, int]:
        from flask import request

        from ndcg_labeler.views.access import ways_on

        code = error.code or 500
        if request.path.startswith("/api/"):
            return {"error": error.name, "detail": error.description}, code
        return render_template("error.html", error=error, ways_on=ways_on()), code


def _register_headers(app: Flask) -> None:
    """Security headers on every response: a CSP without inline script, no sniffing."""

    @app.after_request
    def security_headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response


def _register_template_helpers(app: Flask) -> None:
    """Jinja filters used across templates, and compiled templates kept on disk.

    Compiling a page's templates took ~0.08 s of the first request of every fresh server
    worker; Jinja's bytecode cache (keyed by each template's source checksum, written
    atomically) lets every later process load them instead.
    """
    from jinja2 import FileSystemBytecodeCache

    compiled = Path(app.instance_path) / "templates-compiled"
    compiled.mkdir(exist_ok=True)
    app.jinja_env.bytecode_cache = FileSystemBytecodeCache(str(compiled))
    from ndcg_labeler.rendering import highlight_terms, render_markdown

    app.jinja_env.filters["markdown"] = render_markdown
    app.jinja_env.filters["highlight"] = highlight_terms
    app.jinja_env.filters["shell_quote"] = shlex.quote  # example commands on the token pages
