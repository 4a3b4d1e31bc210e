"""The scale bench's history table (issue 30, item 7): one table, every target, ✓ or ✗.

`python -m bench.history [--small] [--url postgresql+psycopg://...] [--no-sqlite]
[--ten-million] [--steps pages,storage,corpus,refusal] [--counts 50,200,500]` runs, on
SQLite (a new file in a temporary folder for each step) and, with `--url`, on that PostgreSQL
database (EMPTIED before each step), the existing benches (all four steps unless `--steps`
names some; a long run can so be done in parts):

- `bench.many_runs` at 50, 200 and 500 runs of 7,000 queries × 100 (the count is what the
  pages must not depend on; `--small`: 1,000 × 20): each page cold (first request in a new
  process) and warm (median of five more), `flask run list` in a new process (median of
  three, peak RSS);
- bytes per run: `bench.many_runs.build` and `storage` with runs of 7,000 × 1,000 (`--small`:
  1,000 × 100; the target is then per ranked entry), and `run archive --keep 10`;
- `bench.corpus_import` at 1M chunks (`--small`: 100,000; `--ten-million` adds 10M, which
  needs ~6.5 GB for the corpus file under bench/data/ and as much again for the database,
  and raises `NDCG_MAX_DECOMPRESSED_MB` for the import): rate, peak RSS, chunk search;
- the line-2 refusal (issue 28): `flask run upload` of a gzip of 1 GiB unpacked whose line 2
  repeats line 1's docid (`big_gzip` of tests/security/test_bounded_uploads.py), timed as
  its own process with its peak RSS, start-up included.

Then it prints one markdown table: what, size, target, a column per database (value ✓/✗),
with the machine and its load average.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench import corpus_import, many_runs
from bench.run_bench import MB, ROOT, forget_sqlite, machine

COUNTS = (50, 200, 500)
STEPS = ("pages", "storage", "corpus", "refusal")
ARCHIVED_MB = 2.0  # an archived 7,000-query run: stored scores and top-10 lists
RUN_MB = 60.0  # a 7,000 × 1,000 run: lists and stored scores
CHUNKS_PER_S = 20_000
IMPORT_MB = 1024
SEARCH_MS = 300
REFUSAL_S = 1.0
REFUSAL_MB = 200
DEMO = "Demo: HR policies (example data)"  # what `bootstrap` makes with NDCG_DEMO=1

Cell = tuple[str, bool | None]  # the figure, and whether it meets the target (None: no target)


def _fresh(url: str | None, tmp: Path, name: str) -> str:
    """An empty database for one step: a new SQLite file, or the PostgreSQL one emptied."""
    if url is None:
        return f"sqlite:///{tmp / (name + '.sqlite3')}"
    corpus_import.reset(url)
    return url


def _pages(
    url: str | None, tmp: Path, queries: int, runs: int, depth: int
) -> dict[tuple[str, str], Cell]:
    """Every many-runs page and `run list` at one run count."""
    print(f"  many runs: {queries:,} × {depth:,}, {runs} runs", file=sys.stderr)
    cells: dict[tuple[str, str], Cell] = {}
    instance = tmp / f"instance-{runs}"
    found = many_runs.measure(_fresh(url, tmp, f"runs{runs}"), instance, queries, runs, depth)
    # 500 runs of 7,000 × 100 are ~9 GB in SQLite: give the disk back before the next step.
    forget_sqlite(tmp / f"runs{runs}.sqlite3")
    for name, (cold, warm) in found["pages"].items():
        ok = cold <= many_runs.TARGET_COLD_MS and warm <= many_runs.TARGET_WARM_MS
        cells[(name, f"{runs} runs")] = (f"{cold:.0f} / {warm:.0f} ms", ok)
    wall, rss = found["list"]["list"], found["list"]["list_rss"] / MB
    ok = wall <= many_runs.TARGET_LIST_S and rss <= many_runs.TARGET_LIST_MB
    cells[("`flask run list` (process)", f"{runs} runs")] = (f"{wall:.2f} s, {rss:.0f} MB", ok)
    start = found["list"]["help"]
    cells[("  beside it: `flask run --help`", f"{runs} runs")] = (f"{start:.2f} s", None)
    return cells


def _storage(url: str | None, tmp: Path, queries: int, depth: int) -> dict[tuple[str, str], Cell]:
    """Bytes per run (lists and stored scores) and an archived run, on uploaded runs of size
    queries × depth (three uploaded and one bulk clone, which `storage` measures)."""
    print(f"  bytes per run: {queries:,} × {depth:,}", file=sys.stderr)
    db_url = _fresh(url, tmp, "storage")
    many_runs.build(db_url, tmp / "instance-storage", queries, many_runs.BASES + 1, depth)
    kept = many_runs.storage(db_url, tmp / "instance-storage")
    forget_sqlite(tmp / "storage.sqlite3")
    size = f"{queries:,} × {depth:,}"
    total = kept["run_mb"] + kept["scores_mb"]
    per_entry = total * MB / (queries * depth)
    # The target is 60 MB for 7,000 × 1,000: per ranked entry, so that a smaller run compares.
    ok = per_entry <= RUN_MB * MB / 7_000_000
    figure = f"{total:.1f} MB ({kept['run_mb']:.1f} lists + {kept['scores_mb']:.2f} scores)"
    archived = kept["archived_total_mb"]  # its top-10 lists and its stored scores, after
    limit = ARCHIVED_MB * queries / 7000  # the target scales with the queries kept
    return {
        ("bytes per run", size): (figure, ok),
        ("  per ranked entry", size): (f"{per_entry:.1f} B", ok),
        ("`run archive --keep 10`: time, bytes after", size): (
            f"{kept['archive_s']:.2f} s, {archived:.2f} MB",
            archived <= limit,
        ),
        # What the database keeps of them (PostgreSQL: pg_column_size, after TOAST).
        ("  as stored: run, archived", size): (
            f"{kept['stored_mb']:.1f} MB, {kept['stored_archived_mb']:.2f} MB",
            kept["stored_mb"] * MB / (queries * depth) <= RUN_MB * MB / 7_000_000
            and kept["stored_archived_mb"] <= limit,
        ),
    }


_MS = re.compile(r"(\d+) / (\d+) ms")


def _corpus(url: str | None, chunks: int) -> dict[tuple[str, str], Cell]:
    """`flask testset import --corpus` of a synthetic BEIR corpus, then chunk search."""
    print(f"  corpus import: {chunks:,} chunks", file=sys.stderr)
    corpus_import.DATA.mkdir(parents=True, exist_ok=True)
    corpus = corpus_import.DATA / f"corpus-v2-{chunks}.jsonl"
    corpus_import.build_corpus(corpus, chunks)
    if url is not None:
        corpus_import.reset(url)
    # From a small helper process, as the refusal: the import's ru_maxrss would otherwise start
    # from this process's peak (~2 GB after building runs of 7,000 × 1,000).
    helper = [sys.executable, "-m", "bench.history", "--corpus-side", url or "", str(chunks)]
    found = json.loads(subprocess.run(helper, cwd=ROOT, check=True, capture_output=True).stdout)
    size = f"{chunks:,} chunks"
    searched = [int(ms) for pair in _MS.findall(found["search"]) for ms in pair]
    return {
        ("corpus import: chunks/s", size): (
            f"{found['rate']:,.0f} ({found['wall']:.0f} s)",
            found["rate"] >= CHUNKS_PER_S,
        ),
        ("  the same per CPU-second of the importing process", size): (
            f"{chunks / found['cpu']:,.0f} ({found['cpu']:.0f} s CPU)",
            None,
        ),
        ("corpus import: peak RSS", size): (f"{found['rss']:.0f} MB", found["rss"] <= IMPORT_MB),
        ("chunk search, word / docid prefix (cold / warm)", size): (
            found["search"].replace("; ", "<br>"),
            bool(searched) and max(searched) <= SEARCH_MS,
        ),
    }


def corpus_side(url: str, chunks: str) -> None:
    """In a small process: `corpus_import.measure` of the corpus `_corpus` built ("": SQLite)."""
    corpus = corpus_import.DATA / f"corpus-v2-{chunks}.jsonl"
    found = corpus_import.measure(ROOT, url or None, corpus, int(chunks), [])
    print(json.dumps(found))


def refusal_side(url: str, instance: str, path: str) -> None:
    """From a small process (a child's ru_maxrss starts from its parent's peak): `flask run
    upload` of the big gzip, which must fail at line 2; its wall time and peak RSS."""
    env = {**os.environ, "DATABASE_URL": url, "NDCG_INSTANCE_PATH": instance, "NDCG_DEMO": "1"}
    env["NDCG_MAX_DECOMPRESSED_MB"] = "2048"  # the size guard must not be what stops it
    command = [sys.executable, "-m", "flask", "--app", "app", "run", "upload", DEMO, path]
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE)
    err = child.stderr.read().decode() if child.stderr else ""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    refused = os.waitstatus_to_exitcode(status) == 1 and "big.trec.gz:2:" in err
    print(json.dumps({"wall": wall, "rss": usage.ru_maxrss * 1024, "refused": refused}))


def _refusal(url: str | None, tmp: Path) -> dict[tuple[str, str], Cell]:
    """The demo test set in a fresh database, then the refusal, timed from a helper process."""
    from tests.security.test_bounded_uploads import RUN_CASES, big_gzip

    print("  line-2 refusal", file=sys.stderr)
    db_url = _fresh(url, tmp, "refusal")
    instance = tmp / "instance-refusal"
    env = {**os.environ, "DATABASE_URL": db_url, "NDCG_INSTANCE_PATH": str(instance)}
    env |= {"NDCG_DEMO": "1", "NDCG_ADMIN_PASSWORD": "bench-history-1"}
    for setup in (["db", "upgrade"], ["bootstrap"]):
        flask = [sys.executable, "-m", "flask", "--app", "app", *setup]
        subprocess.run(flask, cwd=ROOT, env=env, check=True, capture_output=True)
    _, _, head, line, _ = RUN_CASES[0]  # line 2 repeats line 1's docid
    path = big_gzip(tmp / "big.trec.gz", head, line)
    helper = [sys.executable, "-m", "bench.history", "--refusal-side", db_url, str(instance)]
    out = subprocess.run([*helper, str(path)], cwd=ROOT, env=env, check=True, capture_output=True)
    found = json.loads(out.stdout)
    wall, rss = found["wall"], found["rss"] / MB
    ok = found["refused"] and wall <= REFUSAL_S and rss <= REFUSAL_MB
    figure = f"{wall:.2f} s, {rss:.0f} MB" + ("" if found["refused"] else ", NOT REFUSED")
    return {("line-2 refusal: `run upload` process", "1 GiB gzip"): (figure, ok)}


TARGETS = {
    "`flask run list` (process)": "≤ 0.5 s, ≤ 150 MB",
    "bytes per run": "≤ 60 MB at 7,000 × 1,000",
    "  per ranked entry": f"≤ {RUN_MB * MB / 7_000_000:.1f} B",
    "`run archive --keep 10`: time, bytes after": "≤ 2 MB at 7,000 queries",
    "  as stored: run, archived": "≤ 60 MB, ≤ 2 MB at 7,000 × 1,000",
    "corpus import: chunks/s": f"≥ {CHUNKS_PER_S:,}",
    "corpus import: peak RSS": f"≤ {IMPORT_MB} MB",
    "chunk search, word / docid prefix (cold / warm)": f"≤ {SEARCH_MS} ms",
    "line-2 refusal: `run upload` process": f"≤ {REFUSAL_S:.0f} s, ≤ {REFUSAL_MB} MB",
}


def _target(what: str) -> str:
    if what in TARGETS:
        return TARGETS[what]
    return "" if what.startswith("  ") else "cold ≤ 1 s, warm ≤ 300 ms"


def _mark(cell: Cell | None) -> str:
    if cell is None:
        return "—"
    figure, ok = cell
    return figure if ok is None else f"{figure} {'✓' if ok else '✗'}"


def measure(url: str | None, args: argparse.Namespace) -> dict[tuple[str, str], Cell]:
    """Every step on one database (None: SQLite files in a temporary folder)."""
    queries = 1000 if args.small else 7000
    cells: dict[tuple[str, str], Cell] = {}
    with tempfile.TemporaryDirectory(prefix="bench-history-") as name:
        tmp = Path(name)
        depth = 20 if args.small else 100
        chosen = set(args.steps)
        steps: list[Callable[[], dict[tuple[str, str], Cell]]] = []
        if "pages" in chosen:
            steps += [
                lambda runs=runs: _pages(url, tmp, queries, runs, depth) for runs in args.counts
            ]
        if "storage" in chosen:
            steps.append(lambda: _storage(url, tmp, queries, 100 if args.small else 1000))
        sizes = [100_000] if args.small else [1_000_000]
        if args.ten_million:
            sizes.append(10_000_000)
        if "corpus" in chosen:
            steps += [lambda chunks=chunks: _corpus(url, chunks) for chunks in sizes]
        if "refusal" in chosen:
            steps.append(lambda: _refusal(url, tmp))
        for step in steps:
            done = step()
            # As it goes, so that a long run stopped half-way still leaves its figures.
            for (what, size), cell in done.items():
                print(f"    {what.strip()}, {size}: {_mark(cell)}", file=sys.stderr)
            cells |= done
    return cells


def main() -> None:
    """Run every step on each database, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="smaller sizes, a few minutes")
    parser.add_argument("--url", help="also on this PostgreSQL database (it is EMPTIED)")
    parser.add_argument("--no-sqlite", action="store_true", help="with --url: PostgreSQL only")
    parser.add_argument("--ten-million", action="store_true", help="also a 10M-chunk corpus")
    parser.add_argument(
        "--steps",
        type=lambda text: text.split(","),
        default=list(STEPS),
        help=f"comma-separated, of {','.join(STEPS)} (default: all)",
    )
    parser.add_argument(
        "--counts",
        type=lambda text: [int(n) for n in text.split(",")],
        default=list(COUNTS),
        help="run counts of the pages step (default: 50,200,500)",
    )
    parser.add_argument("--corpus-side", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--refusal-side", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.corpus_side:
        corpus_side(*args.corpus_side)
        return
    if args.refusal_side:
        refusal_side(*args.refusal_side)
        return
    if args.ten_million:
        # 10M chunks are ~6.3 GB unpacked, past the default 4 GB guard.
        os.environ["NDCG_MAX_DECOMPRESSED_MB"] = "16384"
    databases: list[tuple[str, str | None]] = []
    if not args.no_sqlite:
        databases.append(("SQLite", None))
    if args.url:
        databases.append(("PostgreSQL", args.url))
    if not databases:
        parser.error("--no-sqlite needs --url")
    if not set(args.steps) <= set(STEPS):
        parser.error(f"--steps takes {', '.join(STEPS)}")
    started = time.perf_counter()
    loads = [os.getloadavg()[0]]
    found: dict[str, dict[tuple[str, str], Cell]] = {}
    for label, url in databases:
        print(f"{label}:", file=sys.stderr)
        found[label] = measure(url, args)
        loads.append(os.getloadavg()[0])
    rows: list[tuple[str, str]] = []
    for cells in found.values():
        rows += [key for key in cells if key not in rows]
    mode = "--small" if args.small else "full"
    if set(args.steps) != set(STEPS) or list(args.counts) != list(COUNTS):
        mode += f", steps {','.join(args.steps)}, runs {','.join(map(str, args.counts))}"
    print(f"\nbench.history ({mode}), {machine()}; {time.perf_counter() - started:.0f} s, "
          f"load average {min(loads):.1f}–{max(loads):.1f}\n")  # fmt: skip
    print("| what | size | target | " + " | ".join(found) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in found) + " |")
    for what, size in rows:
        marks = [_mark(cells.get((what, size))) for cells in found.values()]
        print(f"| {what} | {size} | {_target(what)} | " + " | ".join(marks) + " |")


if __name__ == "__main__":
    main()
