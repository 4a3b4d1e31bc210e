"""Corpus import at scale: chunks/s and peak RSS of `flask testset import --corpus` (issue 30).

`python -m bench.corpus_import --chunks 1000000 [--url postgresql+psycopg://...] [--old REV]`
builds a seeded synthetic BEIR corpus.jsonl (≈ 570 bytes a line, as the issue's 1M-chunk file)
under bench/data/, then imports it into a fresh test set in a child process of the CLI and
prints the wall time, chunks per second and that process's peak RSS (ru_maxrss via wait4).
`--old REV` also imports with the code of git revision REV (e.g. the commit before streaming),
unpacked with `git archive` into a temporary folder, side by side. Wall time moves with the
machine's load; the child's CPU time (user + sys) is printed beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"


def _words(count: int, seed: int = 7) -> list[str]:
    """A vocabulary of `count` distinct made-up words of 3-9 letters."""
    rng = random.Random(seed)
    words: dict[str, None] = {}
    while len(words) < count:
        words["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9)))] = None
    return list(words)


WORDS = _words(5000)


def build_corpus(path: Path, chunks: int, seed: int = 30) -> None:
    """Write `chunks` BEIR lines (id, title, ~80-word text) to `path`, unless it is there."""
    if path.exists():
        return
    rng = random.Random(seed)
    tmp = path.with_suffix(".part")
    with open(tmp, "w", encoding="utf-8") as out:
        for i in range(chunks):
            words = rng.choices(WORDS, k=80)
            title = " ".join(words[:4])
            line = {"_id": f"d{i}", "title": title, "text": " ".join(words)}
            out.write(json.dumps(line) + "\n")
    tmp.rename(path)


def _flask(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float, str]:
    """Run `flask --app app ARGS` in a child; (wall s, CPU s, peak RSS MB, stdout)."""
    command = [sys.executable, "-m", "flask", "--app", "app", *args]
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def measure(
    cwd: Path, url: str | None, corpus: Path, chunks: int, extra: list[str], keep: str = ""
) -> dict:
    """Create a fresh database and test set, import the corpus; the figures of the import.

    `keep`: an empty folder for the SQLite database and instance, left there afterwards (to
    look at the imported database); by default a temporary folder, removed."""
    with contextlib.ExitStack() as stack:
        tmp = keep or stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-corpus-"))
        env = {**os.environ, "PYTHONPATH": str(cwd), "NDCG_INSTANCE_PATH": f"{tmp}/instance"}
        env["DATABASE_URL"] = url or f"sqlite:///{tmp}/bench.db"
        _flask(["db", "upgrade"], env, cwd)
        name = f"corpus{int(time.time())}"
        _flask(["testset", "create", name], env, cwd)
        args = ["testset", "import", name, "--corpus", str(corpus), *extra]
        server = ServerCpu(url) if url else None
        try:
            wall, cpu, rss, out = _flask(args, env, cwd)
        finally:
            server_cpu = server.stop() if server else None
        search = subprocess.run(
            [sys.executable, "-c", _SEARCH, name, WORDS[4321], "d12345"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    return {
        "wall": wall,
        "cpu": cpu,
        "rate": chunks / wall,
        "rss": rss,
        "server_cpu": server_cpu,
        "out": out.strip(),
        "search": search,
    }


# Chunk search after the import, in a new process: the list page's service call (first page
# of 50 with its total), cold then warm (median of 5), for a word and a docid prefix.
_SEARCH = """
import statistics, sys, time
from app import app
from ndcg_labeler.services import testsets
name, word, prefix = sys.argv[1:4]
with app.app_context():
    test_set = testsets.require_by_name(name)
    out = []
    for term in (word, prefix):
        times = []
        for _ in range(6):
            start = time.perf_counter()
            page = testsets.chunks_page(test_set, 1, search=term)
            page.total
            times.append((time.perf_counter() - start) * 1000)
        warm = statistics.median(times[1:])
        out.append(f"'{term}' ({page.total:,} hits) {times[0]:.0f} / {warm:.0f} ms")
    print("; ".join(out))
"""


class ServerCpu:
    """CPU seconds (user + sys) of the PostgreSQL backends serving the bench's database while
    the import runs: its pg_stat_activity polled twice a second, each backend's /proc stat
    read (the server runs on this machine; the last half second of a backend may be missed)."""

    def __init__(self, url: str) -> None:
        import sqlalchemy as sa

        self._engine = sa.create_engine(url)
        self._database = self._engine.url.database
        self._ticks: dict[int, int] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        import sqlalchemy as sa

        query = sa.text(
            "SELECT pid FROM pg_stat_activity WHERE datname = :db AND pid <> pg_backend_pid()"
        )
        with self._engine.connect() as conn:
            while not self._done.wait(0.5):
                for (pid,) in conn.execute(query, {"db": self._database}):
                    try:
                        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    except OSError:
                        continue
                    self._ticks[pid] = int(fields[11]) + int(fields[12])
                conn.rollback()

    def stop(self) -> float:
        """Stop polling; the backends' CPU seconds seen."""
        self._done.set()
        self._thread.join()
        self._engine.dispose()
        return sum(self._ticks.values()) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    """Build the corpus, import it (and with the old code when asked), print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--url", help="a PostgreSQL URL (its database is emptied!); default SQLite")
    parser.add_argument("--old", metavar="REV", help="also import with the code of git REV")
    parser.add_argument("--keep", metavar="DIR", default="", help="keep the database in DIR")
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    corpus = DATA / f"corpus-v2-{args.chunks}.jsonl"
    build_corpus(corpus, args.chunks)
    size = corpus.stat().st_size / 1e6
    print(f"corpus: {args.chunks:,} chunks, {size:.0f} MB ({corpus})")
    sides = [("streaming (this tree)", ROOT)]
    worktree = None
    if args.old:
        worktree = Path(tempfile.mkdtemp(prefix="bench-old-"))
        archive = subprocess.run(
            ["git", "archive", args.old], cwd=ROOT, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(worktree)], input=archive, check=True)
        sides.append((f"old ({args.old})", worktree))
    try:
        print(f"load average before: {os.getloadavg()[0]:.1f}")
        print(
            "| code | wall | chunks/s | CPU (user+sys) | server CPU | peak RSS "
            "| chunk search cold / warm |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for label, cwd in sides:
            if args.url:
                reset(args.url)
            found = measure(cwd, args.url, corpus, args.chunks, [], args.keep)
            server = "—" if found["server_cpu"] is None else f"{found['server_cpu']:.1f} s"
            print(
                f"| {label} | {found['wall']:.1f} s | {found['rate']:,.0f} | "
                f"{found['cpu']:.1f} s | {server} | {found['rss']:.0f} MB | {found['search']} |"
            )
            print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        if worktree is not None:
            shutil.rmtree(worktree, ignore_errors=True)


def reset(url: str) -> None:
    """Empty the PostgreSQL database (schema public) so that `db upgrade` starts afresh."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()


if __name__ == "__main__":
    main()
