"""Browser fixtures: a live server over a migrated SQLite file and Debian's Chromium.

The server runs the real app (CSRF on) with werkzeug in a thread on 127.0.0.1 and a free
port; Playwright's sync API drives /usr/bin/chromium headless (its own browser download is
never used). Browser tests are skipped only when that Chromium is missing.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from ndcg_labeler.extensions import db
from ndcg_labeler.factory import create_app
from ndcg_labeler.services import accounts
from tests.browser.live import ADMIN_PASSWORD, ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, LiveServer


@pytest.fixture
def live_server(tmp_path: Path, sqlite_template: Path) -> Iterator[LiveServer]:
    """The app with CSRF on, over a fresh migrated SQLite copy, with the first admin."""
    db_path = tmp_path / "browser.sqlite3"
    shutil.copy(sqlite_template, db_path)
    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{db_path}",
            "INSTANCE_PATH": str(tmp_path),
            "SECRET_KEY": "browser-test-secret",
            "NDCG_DEMO": False,
            "NDCG_SECURE_COOKIES": False,  # the live server speaks plain http
        }
    )
    with app.app_context():
        accounts.ensure_first_admin(ADMIN_PASSWORD)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield LiveServer(f"http://127.0.0.1:{server.server_port}", app)
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()
        with app.app_context():
            db.engine.dispose()


@pytest.fixture
def browser_page(request: pytest.FixtureRequest) -> Iterator[object]:
    """A fresh Chromium page (1280x900); skipped with a reason when Chromium is absent."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium to run the browser tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(15_000)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: _console(msg, errors))
        page.on("response", lambda response: _response(response, errors))
        try:
            yield page
        finally:
            context.close()
            browser.close()
        # A CSP violation or a script error shows up here: fail the test that caused it.
        assert errors == [], f"browser console errors: {errors}"


def _console(message: object, errors: list[str]) -> None:
    """Script errors and CSP violations; failed loads are reported (with URL) by _response."""
    text = getattr(message, "text", "")
    if getattr(message, "type", "") == "error" and not text.startswith("Failed to load resource"):
        errors.append(text)


def _response(response: object, errors: list[str]) -> None:
    """Any 404/500 the pages asked for, the browser's own /favicon.ico probe included."""
    status, url = getattr(response, "status", 200), getattr(response, "url", "")
    if status in (404, 500):
        errors.append(f"{status} {url}")


@pytest.fixture
def artifacts() -> Path:
    """test-artifacts/ (gitignored): screenshots for people to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
