"""The application factory: `create_app` builds the Flask app, its web layer now or on first need.

The app has two layers. The base (configuration, the database, the CLI) is what every process
needs. The web layer (blueprints and the views, forms, services and libraries they import, CSRF,
login, the throttle, security headers, error pages, template filters) is what serving needs:
its imports and ~100 routes' URL builders were about a third of `flask run list`'s CPU time,
paid on every start-up for pages it never serves.

Servers (`gunicorn app:app`, `flask run`) and the tests build both at once (the default). A
command-line process builds the base only (`create_app(web_now=False)`, chosen by
ndcg_labeler.entry) and the web layer the first time anything reads the URL map's routes: the
first request (routing matches it), `flask routes`, `url_for`. So every process that serves or
looks at a route sees all of them, and a command that does neither never imports a view.
"""

from __future__ import annotations

import os
import re
import shlex
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask, Request, Response, render_template, request
from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import BadRequest, HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.routing import Map

from ndcg_labeler import config, paths

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
# Request bodies (the gate's parameters) are flat; Python's JSON parser recurses per level and
# raises RecursionError (a 500) near 1,000, so anything deeper than this is refused unparsed.
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def _json_depth(text: str | bytes) -> int:
    """How deep the arrays and objects of a JSON text nest, counted without parsing it."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    depth = deepest = 0
    for bracket in _JSON_BRACKET.findall(_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


class _BoundedJSON(DefaultJSONProvider):
    """Flask's JSON, refusing texts nested deeper than MAX_JSON_DEPTH before parsing them."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        """Parse `s`; ValueError (a 400 in a request) when it nests too deep."""
        if _json_depth(s) > MAX_JSON_DEPTH:
            raise ValueError(f"it nests deeper than {MAX_JSON_DEPTH} levels")
        return super().loads(s, **kwargs)


class _Request(Request):
    """A request whose unreadable JSON body is a 400 that says why, in production too."""

    def on_json_loading_failed(self, e: ValueError | None) -> Any:
        """Flask keeps the parser's reason for debug mode only; the reason is the answer."""
        if e is None:
            return super().on_json_loading_failed(e)
        raise BadRequest(f"the body is not valid JSON: {e}") from e


class _RoutesOnFirstRead(Map):
    """A URL map that runs a hook (attaching the web layer) before its routes are first read.

    Every read of the routes goes through `update()`: matching a request, building a URL,
    `iter_rules()` (`flask routes`). Binding the map (an app context with SERVER_NAME set)
    does not, so a command's app context does not attach the web layer either.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.before_first_read: Callable[[], None] | None = None
        # The requests of a threaded server that arrive while the hook runs wait for it rather
        # than meet a half-filled map; reentrant, and `_in_hook`, for the hook's own reads.
        self._first_read_lock = threading.RLock()
        self._in_hook = False

    def update(self) -> None:
        """Run the hook once, then Werkzeug's update (a failed hook runs again next read)."""
        if self.before_first_read is not None:
            with self._first_read_lock:
                if self.before_first_read is not None and not self._in_hook:
                    self._in_hook = True
                    try:
                        self.before_first_read()
                    finally:
                        self._in_hook = False
                    self.before_first_read = None
        super().update()


class _App(Flask):
    """Flask with the URL map above; with no hook set it is Werkzeug's map, unchanged."""

    url_map_class = _RoutesOnFirstRead
    url_map: _RoutesOnFirstRead


def create_app(test_config: dict[str, Any] | None = None, *, web_now: bool = True) -> Flask:
    """Build the app: configuration, the database, the CLI, and the web layer (see above).

    `test_config` overrides the settings read from the environment (and may name the
    instance folder as INSTANCE_PATH). `web_now=False` (a command-line process) attaches the
    web layer when the URL map's routes are first read instead of now.
    """
    instance_path = (test_config or {}).get("INSTANCE_PATH") or os.environ.get(
        "NDCG_INSTANCE_PATH", str(paths.default_instance())
    )
    # Named after the package, not this module: the logger's name and the app's root path.
    app = _App(
        "ndcg_labeler",
        instance_path=str(instance_path),
        template_folder=str(paths.data_folder("templates")),
        static_folder=str(paths.data_folder("static")),
    )
    app.request_class = _Request
    app.json = _BoundedJSON(app)
    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    app.config.from_mapping(config.from_environment(app.instance_path))
    if test_config:
        app.config.from_mapping(test_config)
    _apply_deployment(app)

    # Imported here, as in Flask's tutorial: the entry points set the runtime knobs first
    # (ndcg_labeler.runtime), and the app's modules load numpy.
    from ndcg_labeler import models  # noqa: F401  (register the mappers)
    from ndcg_labeler.cli import register_cli
    from ndcg_labeler.extensions import db

    register_cli(app)
    db.init_app(app)
    if web_now:
        _attach_web(app)
    else:
        app.url_map.before_first_read = lambda: _attach_web(app)
    return app


def _attach_web(app: Flask) -> None:
    """The web layer: headers, CSRF, login, throttle, blueprints, error pages, template helpers."""
    from ndcg_labeler import throttle
    from ndcg_labeler.views import register_blueprints
    from ndcg_labeler.web_extensions import csrf, login_manager

    _refuse_untrusted_hosts(app)
    _register_headers(app)
    csrf.init_app(app)
    login_manager.init_app(app)
    throttle.init_app(app)
    register_blueprints(app)
    _register_error_pages(app)
    _register_template_helpers(app)


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


def _refuse_untrusted_hosts(app: Flask) -> None:
    """Answer 400 to a Host that TRUSTED_HOSTS refuses, before any other hook runs: the request
    has no URL map then, and a hook building a URL (the sign-in redirect) would fail with 500."""
    from flask.globals import request_ctx

    @app.before_request
    def untrusted_host() -> None:
        if request_ctx.url_adapter is None and request.routing_exception is not None:
            raise request.routing_exception


def _register_headers(app: Flask) -> None:
    """Security headers on every response: a CSP without inline script, no sniffing."""

    @app.after_request
    def security_headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response


def _register_error_pages(app: Flask) -> None:
    """Render HTTP errors with the site's layout (JSON for the API)."""
    from flask.globals import request_ctx

    from ndcg_labeler.views.access import ways_on

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> tuple[Any, int]:
        code = error.code or 500
        if code == 413:
            error.description = _too_large(app)
        if request.path.startswith("/api/"):
            return {"error": error.name, "detail": error.description}, code
        if request_ctx.url_adapter is None:
            # No URL map (an untrusted Host): the site's layout cannot link anywhere.
            return error.get_response(), code
        return render_template("error.html", error=error, ways_on=ways_on()), code


def _too_large(app: Flask) -> str:
    """What a refused upload (413) says: the limit, and the ways round it."""
    limit = (app.config.get("MAX_CONTENT_LENGTH") or 0) // (1024 * 1024)
    return (
        f"The upload is larger than this server accepts ({limit} MB, the setting "
        "NDCG_MAX_UPLOAD_MB). Compress it with gzip: the limit counts the compressed bytes. "
        "Or, on the server, import it from the command line (flask testset import, flask run "
        "upload), which has no upload limit."
    )


def _register_template_helpers(app: Flask) -> None:
    """Jinja filters used across templates, and compiled templates kept on disk.

    Compiling a page's templates took ~0.08 s of the first request of every fresh server
    worker; Jinja's bytecode cache (keyed by each template's source checksum, written
    atomically) lets every later process load them instead.
    """
    from jinja2 import FileSystemBytecodeCache

    from ndcg_labeler.rendering import highlight_terms, render_markdown, utc_time
    from ndcg_labeler.services import counted, noun

    compiled = Path(app.instance_path) / "templates-compiled"
    compiled.mkdir(exist_ok=True)
    app.jinja_env.bytecode_cache = FileSystemBytecodeCache(str(compiled))
    app.jinja_env.filters["markdown"] = render_markdown
    app.jinja_env.filters["highlight"] = highlight_terms
    # "1 pair", "2 pairs": templates say counts as the services and the CLI do.
    app.jinja_env.filters["counted"] = counted
    app.jinja_env.globals["noun"] = noun
    app.jinja_env.filters["utc"] = utc_time  # every time shown on a page, marked UTC
    app.jinja_env.filters["shell_quote"] = shlex.quote  # example commands on the token pages
