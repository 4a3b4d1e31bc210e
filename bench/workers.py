"""Benchmark: gunicorn with 4 workers and 10 runs of 7,000 x 1,000 (issue 10, point 3).

`python -m bench.workers` copies bench.run_bench's prepared SQLite test set (7,000 queries;
`make bench` creates it), uploads the 7,000 x 1,000 run ten times under ten names (`flask run
upload`, each its own process), creates an admin, starts `gunicorn -w 4 app:app` on
127.0.0.1 (a free port), logs in and asks dashboard pages (overview, each run's query table)
one at a time until every worker has answered one, then in bounded rounds of four at once.
gunicorn's access log records the answering worker's pid and the request time, so the
figure per worker is its own first dashboard request after it started. Then it reads each
worker's memory from /proc: RSS (resident, shared pages counted in every worker), PSS (shared
pages divided between the processes that map them) and the peak (VmHWM), and stops gunicorn.

What is shared: nothing is memory-mapped. Scores come from the score store (one `run_score`
row per run and setting, read in milliseconds), and each worker keeps at most 64 score states
in memory, so a worker's size is bounded by that cache, not by the runs' entries.
Targets: each worker under 400 MB, the first dashboard request after a worker starts <= 0.5 s.
The machine is shared: times move with its load (printed).
"""

from __future__ import annotations

import argparse
import http.cookiejar
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from bench.run_bench import MB, ROOT, data_paths, generate, machine, run_side, sqlite_page_size

PASSWORD = "bench-admin-pw-1"
FLASK = [sys.executable, "-m", "flask", "--app", "app"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _memory(pid: int) -> dict[str, int]:
    """kB figures of one process from /proc (Rss/Pss from smaps_rollup, VmHWM from status)."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("Rss", "Pss"):
            out[name] = int(rest.split()[0])
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            out["HWM"] = int(line.split()[1])
    return out


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def _first_dashboard(log: Path) -> dict[int, tuple[float, str]]:
    """Each worker's first dashboard request in gunicorn's access log: (seconds, what)."""
    first: dict[int, tuple[float, str]] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        pid, seconds, status, url = line.split(" ", 3)
        worker = int(pid.strip("<>"))
        if "/dashboard" in url and worker not in first:
            first[worker] = (float(seconds), f"{url} {status}")
    return first


def _prepare(env: dict[str, str], run_file: Path, runs: int) -> None:
    for n in range(1, runs + 1):
        subprocess.run(
            [*FLASK, "run", "upload", "bench", str(run_file), "--name", f"run{n}"],
            env=env,
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    subprocess.run(
        [*FLASK, "user", "create", "bench-admin", "--role", "admin"],
        env=env,
        cwd=ROOT,
        check=True,
        input=PASSWORD + "\n",
        text=True,
        stdout=subprocess.DEVNULL,
    )


def _opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )


def _login(opener: urllib.request.OpenerDirector, base: str) -> None:
    page = opener.open(f"{base}/login", timeout=60).read().decode()
    token = re.search(r'name="csrf_token" (?:type="hidden" )?value="([^"]+)"', page)
    if token is None:
        token = re.search(r'name="csrf-token" content="([^"]+)"', page)
    assert token is not None, "no CSRF token on the login page"
    data = urllib.parse.urlencode(
        {"csrf_token": token.group(1), "username": "bench-admin", "password": PASSWORD}
    ).encode()
    answer = opener.open(f"{base}/login", data=data, timeout=60)
    answer.read()
    if answer.geturl().startswith(f"{base}/login"):  # the form again: not signed in
        raise SystemExit("could not sign in as bench-admin (is the prepared database whole?)")


def _wait_up(base: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{base}/login", timeout=5).read()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("gunicorn did not answer in time")


def main() -> None:
    """Set up, serve, request, measure, stop."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=6, help="rounds of `workers` requests")
    args = parser.parse_args()
    args.depth, args.judged, args.changes = 1000, 40, 1
    paths = data_paths(args.queries, args.depth, args.judged)
    generate(paths, args.queries, args.depth, args.judged)
    run_side("prepare", args)
    tmp = Path(tempfile.mkdtemp(prefix="ndcg-workers-"))
    work = tmp / "workers.sqlite3"
    # The set-up (ten uploads and the admin) is kept beside the data for the next run.
    ready = paths["prepared"].with_name(f"workers-{args.queries}-{args.runs}.sqlite3")
    if ready.exists() and sqlite_page_size(ready) != sqlite_page_size(paths["prepared"]):
        ready.unlink()  # set up before the app's page size changed: set up again
    shutil.copy(ready if ready.exists() else paths["prepared"], work)
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "DATABASE_URL": f"sqlite:///{work}",
        "NDCG_INSTANCE_PATH": str(tmp / "instance"),
        "NDCG_DEMO": "0",
        "NDCG_SECRET_KEY": "bench-workers",
        "NDCG_SECURE_COOKIES": "0",
        "NDCG_MAX_DECOMPRESSED_MB": str(8 * 1024),
    }
    if not ready.exists():
        t0 = time.perf_counter()
        _prepare(env, paths["run"], args.runs)
        print(
            f"set-up: {args.runs} runs of {args.queries} x 1,000 ({time.perf_counter() - t0:.0f} s)"
        )
        shutil.copy(work, ready)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp / "access.log"
    server = subprocess.Popen(
        [
            sys.executable, "-m", "gunicorn", "-w", str(args.workers), "--timeout", "120",
            "-b", f"127.0.0.1:{port}", "--access-logfile", str(log),
            "--access-logformat", "%(p)s %(L)s %(s)s %(U)s", "app:app",
        ],
        env=env, cwd=ROOT, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_up(base, time.monotonic() + 120)
        opener = _opener()
        _login(opener, base)
        pages = ["/test-sets/1/dashboard/"] + [
            f"/test-sets/1/dashboard/runs/{n}" for n in range(1, args.runs + 1)
        ]
        errors: list[str] = []

        def get(url: str) -> None:
            try:
                answer = opener.open(base + url, timeout=120)
                answer.read()
                if answer.geturl() != base + url:  # sent elsewhere (signed out): not measured
                    errors.append(f"{url}: redirected to {answer.geturl()}")
            except OSError as exc:
                errors.append(f"{url}: {exc}")

        # One request at a time until every worker has answered a dashboard page: each worker's
        # first is then timed without our other requests competing for the 2 CPUs.
        workers = _children(server.pid)
        for i in range(10 * args.workers):
            get(pages[i % len(pages)])
            if set(_first_dashboard(log)) >= set(workers):
                break
        # Then bounded rounds of concurrent requests (memory under load).
        for r in range(args.rounds):
            threads = [
                threading.Thread(target=get, args=(pages[(r * args.workers + i) % len(pages)],))
                for i in range(args.workers)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        workers = _children(server.pid)
        memory = {pid: _memory(pid) for pid in workers}
        master = _memory(server.pid)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    first = _first_dashboard(log)
    print(f"gunicorn -w {args.workers}, {args.runs} runs; master RSS {master['Rss'] / 1024:.0f} MB")
    print(f"{'worker':>8} {'RSS':>8} {'PSS':>8} {'peak':>8}  first dashboard request")
    for pid in workers:
        mem = memory[pid]
        seconds, what = first.get(pid, (float("nan"), "(none reached this worker)"))
        print(
            f"{pid:>8} {mem['Rss'] / 1024:>5.0f} MB {mem['Pss'] / 1024:>5.0f} MB "
            f"{mem['HWM'] / 1024:>5.0f} MB  {seconds:.3f} s  {what}"
        )
    peak = max(m["HWM"] for m in memory.values()) * 1024
    worst = max((s for s, _ in first.values()), default=float("nan"))
    print(
        f"each worker < 400 MB (peak): {peak / MB:.0f} MB {'met' if peak < 400 * MB else 'MISSED'}"
    )
    print(f"first dashboard request <= 0.5 s (worst worker): {worst:.3f} s "
          f"{'met' if worst <= 0.5 else 'MISSED'}")  # fmt: skip
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f} (shared machine)")
    shutil.rmtree(tmp, ignore_errors=True)
    if errors:
        raise SystemExit("errors (the figures above do not count):\n  " + "\n  ".join(errors))


if __name__ == "__main__":
    main()
