"""The scale benchmark's server side (bench/scale.py): `gunicorn -w 1` on a free port with a
logged-in session, pages timed cold (a freshly started server per page) and warm, peak RSS."""

from __future__ import annotations

import contextlib
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import requests

from bench.dashboard_pages import PASSWORD
from bench.run_bench import ROOT
from bench.workers import _children, _free_port

ADMIN = "bench-admin"
WARM = 5
Pages = list[tuple[str, str]]


class Server:
    """A `gunicorn -w 1` process on a free port, with a logged-in requests session."""

    def __init__(self, env: dict[str, str], logfile: Path, cwd: Path = ROOT) -> None:
        self.base = f"http://127.0.0.1:{_free_port()}"
        self.session = requests.Session()
        self.logfile = logfile
        with logfile.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-w", "1", "--timeout", "600",
                 "-b", self.base.removeprefix("http://"), "app:app"],
                env=env, cwd=cwd, stdout=out, stderr=out,
            )  # fmt: skip

    def login(self) -> None:
        """Wait for the worker to answer /login, then log in as the bench admin."""
        deadline = time.monotonic() + 120
        while True:
            try:
                page = self.session.get(f"{self.base}/login", timeout=30)
                if page.status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                tail = self.logfile.read_text()[-2000:]
                raise SystemExit(f"the server did not start:\n{tail}")
            time.sleep(0.1)
        token = re.search(r'name="csrf_token" (?:type="hidden" )?value="([^"]+)"', page.text)
        assert token is not None, "no CSRF token on the login page"
        answer = self.session.post(
            f"{self.base}/login",
            data={"csrf_token": token.group(1), "username": ADMIN, "password": PASSWORD},
            allow_redirects=False,
            timeout=60,
        )
        assert answer.status_code in (302, 303), f"login refused ({answer.status_code})"

    def get(self, url: str, accept: tuple[int, ...] = (200,)) -> tuple[float, int]:
        """GET one page: milliseconds until its whole body arrived, and the status."""
        t0 = time.perf_counter()
        response = self.session.get(self.base + url, timeout=900, allow_redirects=False)
        elapsed = (time.perf_counter() - t0) * 1000
        assert response.status_code in accept, (url, response.status_code, response.text[:300])
        return elapsed, response.status_code

    def ready(self, url: str) -> tuple[float, float | None]:
        """GET a page until it shows its figures: total ms, and the ms of a first 202
        ("computing": a large set's first team figures, or a comparison's statistics, are
        computed in the background; the browser asks again every 1-3 s, this asks every 0.1 s)
        or None when it answered 200."""
        t0 = time.perf_counter()
        first, status = self.get(url, (200, 202))
        computing = status == 202
        while status == 202:
            time.sleep(0.1)
            status = self.get(url, (200, 202))[1]
        total = (time.perf_counter() - t0) * 1000
        return (total, first) if computing else (first, None)

    def peak_rss(self) -> tuple[int, int]:
        """VmHWM in bytes of the master and of its (one) worker."""
        worker = _children(self.process.pid)[0]
        return _hwm(self.process.pid), _hwm(worker)

    def stop(self) -> None:
        """SIGTERM and wait (gunicorn stops its worker)."""
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _hwm(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def serving(env: dict[str, str], logfile: Path, cwd: Path = ROOT) -> Iterator[Server]:
    """A started, logged-in server (running the code in `cwd`), stopped on the way out."""
    server = Server(env, logfile, cwd)
    try:
        server.login()
        yield server
    finally:
        server.stop()


def time_pages(
    env: dict[str, str],
    logfile: Path,
    pages: Pages,
    before_cold: Callable[[], None] = lambda: None,
    cwd: Path = ROOT,
) -> tuple[dict[str, tuple[float, float, float | None]], int, int]:
    """{page: (cold ms, warm ms, ms of a first 202 or None)} and the peak RSS of the warm
    server's master and worker (servers running the code in `cwd`)."""
    cold: dict[str, tuple[float, float | None]] = {}
    for name, url in pages:
        before_cold()
        with serving(env, logfile, cwd) as server:
            cold[name] = server.ready(url)
    with serving(env, logfile, cwd) as server:
        for _, url in pages:
            server.ready(url)
        warm = {
            name: statistics.median(server.get(url)[0] for _ in range(WARM)) for name, url in pages
        }
        master, worker = server.peak_rss()
    found = {name: (cold[name][0], warm[name], cold[name][1]) for name, _ in pages}
    return found, master, worker
