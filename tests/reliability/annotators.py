"""Concurrent annotators against a real server (gunicorn, several workers): each logs in
separately and grades through the HTTP forms as fast as it can. Used by the reduced test in
tests/reliability and by bench/load_annotators.py at full size."""

from __future__ import annotations

import hashlib
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
_INPUT = re.compile(r"<input\b[^>]*>")
_ATTR = re.compile(r'(\w+)="([^"]*)"')


def hidden_fields(html: str) -> dict[str, str]:
    """name -> value of every hidden input, attributes in any order."""
    out = {}
    for tag in _INPUT.findall(html):
        attrs = dict(_ATTR.findall(tag))
        if attrs.get("type") == "hidden" and "name" in attrs:
            out[attrs["name"]] = attrs.get("value", "")
    return out


_ACTION = re.compile(r'<form method="post" action="([^"]+/label/\d+)"')


@dataclass
class Tally:
    """What the clients saw: acknowledged grades, POST latencies, errors."""

    acknowledged: dict[str, set[str]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    server_errors: int = 0
    locked: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def summary(self) -> str:
        ordered = sorted(self.latencies) or [0.0]
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        acks = sum(len(v) for v in self.acknowledged.values())
        return (
            f"{acks} grades acknowledged; grade POST p50 {statistics.median(ordered):.0f} ms, "
            f"p95 {p95:.0f} ms, max {max(ordered):.0f} ms; 5xx {self.server_errors}, "
            f"'database is locked' {self.locked}"
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def instance_settings(instance: Path) -> dict[str, str]:
    """The instance folder and a job queue of its own (SQLite in it, or a Redis queue named
    after it), shared by a server and the job workers started for it."""
    return {
        "NDCG_INSTANCE_PATH": str(instance),
        "NDCG_JOBS_SQLITE": str(instance / "jobs.sqlite3"),
        "NDCG_JOBS_QUEUE": f"test-{hashlib.sha1(str(instance).encode()).hexdigest()[:12]}",
    }


def start_server(
    database_url: str, instance: Path, workers: int = 4, settings: dict[str, str] | None = None
) -> tuple[subprocess.Popen, str]:
    """gunicorn with `workers` workers, as `make serve` runs it; returns (process, base URL).

    Its instance folder (spooled uploads, the job queue) is `instance`; `settings` are more
    environment settings. The server leads a process group of its own (see crashes.kill_group).
    """
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "NDCG_SECRET_KEY": "load-test-secret",
        "NDCG_DEMO": "0",
        "NDCG_SECURE_COOKIES": "0",
        **instance_settings(instance),
        **(settings or {}),
    }
    command = [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--bind",
               f"127.0.0.1:{port}", "--timeout", "60", "app:app"]  # fmt: skip
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(base + "/login", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("gunicorn did not start")


def login(client: httpx.Client, username: str, password: str) -> None:
    """Log the client in through the login form (its CSRF token included)."""
    token = hidden_fields(client.get("/login").text)["csrf_token"]
    login = {"username": username, "password": password, "csrf_token": token}
    assert client.post("/login", data=login).status_code == 302


def annotate(base: str, username: str, password: str, test_set_id: int, grades: int,
             tally: Tally) -> None:  # fmt: skip
    """Log in and grade up to `grades` pairs through the forms, recording what was acked."""
    rng = random.Random(username)
    with httpx.Client(base_url=base, timeout=30, follow_redirects=False) as client:
        login(client, username, password)
        with tally.lock:  # filled as grades are acknowledged (a client cut off keeps them)
            mine = tally.acknowledged.setdefault(username, set())
        for _ in range(grades):
            found = client.get(f"/test-sets/{test_set_id}/label", follow_redirects=True)
            action = _ACTION.search(found.text)
            if found.status_code >= 500:
                with tally.lock:
                    tally.server_errors += 1
                continue
            if action is None:
                break  # nothing left for me
            rest = found.text.split(action.group(0), 1)[1]
            form = hidden_fields(rest.split("</form>", 1)[0])
            form["grade"] = str(rng.randint(0, 3))
            started = time.perf_counter()
            answer = client.post(action.group(1), data=form)
            took = (time.perf_counter() - started) * 1000
            with tally.lock:
                tally.latencies.append(took)
                if answer.status_code >= 500:
                    tally.server_errors += 1
                    tally.locked += "database is locked" in answer.text
                elif answer.status_code == 302:
                    mine.add(action.group(1).rsplit("/", 1)[1])


def run_annotators(base: str, users: list[str], password: str, test_set_id: int,
                   grades: int) -> Tally:  # fmt: skip
    tally = Tally()
    threads = [
        threading.Thread(target=annotate, args=(base, u, password, test_set_id, grades, tally))
        for u in users
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally


def stored_judgments(app) -> list[tuple[int, int, int]]:  # type: ignore[no-untyped-def]
    """(annotator id, query id, chunk id) of every stored judgment, read after the run."""
    import sqlalchemy as sa

    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import Judgment

    with app.app_context():
        stmt = sa.select(Judgment.annotator_id, Judgment.query_id, Judgment.chunk_id)
        return [tuple(row) for row in db.session.execute(stmt)]
