"""What the browser tests share besides fixtures: the Chromium to drive, the first admin's
password, where screenshots go and the running server's handle (see conftest.py here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask, abort

from ndcg_labeler.views import label_loop

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
ADMIN_PASSWORD = "browser-admin-pw-1"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@dataclass
class LiveServer:
    """The running app: its base URL and the Flask app (for database checks)."""

    url: str
    app: Flask


def log_in(page: Any, base: str, username: str = "admin", password: str = ADMIN_PASSWORD) -> None:
    """Log in through the real form and wait for the home page."""
    page.goto(base + "/login")
    page.fill("#username", username)
    page.fill("#password", password)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(base + "/")


def shown_docid(page: Any) -> str:
    """The docid of the chunk the labeling page shows now."""
    return str(page.locator(".chunk-panel .panel-kicker code").inner_text())


def answer_and_wait(page: Any, key: str) -> None:
    """Press a key that answers the shown pair; wait until the next pair is shown (the page
    swaps in a prefetched card, no navigation) and every answer is acknowledged."""
    before = shown_docid(page)
    page.keyboard.press(key)
    page.wait_for_function(
        "d => document.querySelector('.chunk-panel .panel-kicker code')?.textContent !== d",
        arg=before,
    )
    wait_saved(page)


def wait_saved(page: Any) -> None:
    """Wait until the save indicator says every answer given on the page was stored."""
    page.wait_for_selector("[data-save-state][data-state=saved]")


class PausedSaves:
    """Make the live server refuse every background save with a 503 (storing nothing), and take
    that back: deterministic, unlike intercepting requests in the browser, whose Python handlers
    run late on a loaded machine (a paused save then went through after the route was gone)."""

    def __init__(self, monkeypatch: Any) -> None:
        self.monkeypatch = monkeypatch

    def refuse(self) -> None:
        def unavailable(*args, **kwargs):
            abort(503, description="saving is paused")

        self.monkeypatch.setattr(label_loop, "save_answer", unavailable)

    def allow(self) -> None:
        self.monkeypatch.undo()
