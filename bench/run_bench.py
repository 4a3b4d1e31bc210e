"""Benchmark: our run upload + scoring against pytrec_eval (and ranx, if installed) on one run.

`make bench` (python -m bench.run_bench) generates, seeded, into bench/data/ a TREC run of
7,000 queries x 1,000 chunks and graded qrels (about 40 judged chunks per query, grades 0-3),
then measures, each side in its own child process (so peak memory, ru_maxrss read with
wait4, is that side's alone):

- ours: upload (parse, validate, rank, store in a fresh SQLite test set that already holds the
  queries and the qrels as judgments; that set-up is done before, in another process), the
  first full scoring (NDCG@10; all standard cutoffs are computed in the same pass), a cold
  re-scoring from the database (what another server process does), and re-scoring after a
  single grade change (median of several);
- pytrec_eval: parse run and qrels into dicts (a plain Python loop, the usual way) and
  RelevanceEvaluator(qrels, {"ndcg_cut"}).evaluate(run);
- ranx, only if it is installed: Qrels/Run from the same files and evaluate ndcg@10.

`--small` runs on 700 queries for a quick look.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
SEED = 20240613
GB = 1024**3
MB = 1024**2
ROOT = Path(__file__).resolve().parents[1]


def data_paths(queries: int, depth: int, judged: int) -> dict[str, Path]:
    """Where the generated files of one size live."""
    stem = f"{queries}x{depth}-j{judged}-s{SEED}"
    return {
        "run": DATA / f"run-{stem}.trec",
        "qrels": DATA / f"qrels-{stem}.txt",
        "queries": DATA / f"queries-{stem}.tsv",
        "prepared": DATA / f"prepared-{stem}.sqlite3",
        "work": DATA / f"work-{stem}.sqlite3",
    }


def generate(paths: dict[str, Path], queries: int, depth: int, judged: int) -> None:
    """Write the run, qrels and queries (seeded; skipped when they exist)."""
    if all(paths[k].exists() for k in ("run", "qrels", "queries")):
        return
    import numpy as np  # here, not at the top: see side_ours

    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    space = 1 << 23  # docids doc0000000..doc8388607, shared across queries
    qids = [f"q{i:05d}" for i in range(queries)]
    with open(paths["run"], "w") as run, open(paths["qrels"], "w") as qrels:
        for qid in qids:
            # start + i * odd stride (mod 2^23) gives `depth` distinct docids per query.
            start, stride = int(rng.integers(space)), int(rng.integers(space // 2)) * 2 + 1
            docs = (start + np.arange(depth + judged, dtype=np.int64) * stride) % space
            # 4 decimals make some score ties, as real runs have: trec_eval's docid order.
            scores = np.sort(np.round(rng.random(depth) * 30.0, 4))[::-1]
            names = [f"doc{d:07d}" for d in docs.tolist()]
            run.write(
                "".join(
                    f"{qid} Q0 {names[r]} {r + 1} {scores[r]:.4f} bench\n" for r in range(depth)
                )
            )
            # Judged: mostly from the top 100 (pooled), the rest deeper or not retrieved.
            top = rng.choice(min(100, depth), size=min(judged * 3 // 4, depth), replace=False)
            rest = rng.choice(
                np.arange(min(100, depth), depth + judged), size=judged - top.size, replace=False
            )
            grades = rng.choice(4, size=judged, p=[0.4, 0.3, 0.2, 0.1])
            picked = np.concatenate([top, rest]).tolist()
            qrels.write(
                "".join(
                    f"{qid} 0 {names[i]} {g}\n"
                    for i, g in zip(picked, grades.tolist(), strict=True)
                )
            )
    paths["queries"].write_text("".join(f"{q}\tbenchmark query {q}\n" for q in qids))


def _app(db_path: Path):  # type: ignore[no-untyped-def]
    from ndcg_labeler.extensions import ensure_migrate
    from ndcg_labeler.factory import create_app

    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{db_path}",
            "NDCG_DEMO": False,
            "INSTANCE_PATH": str(DATA / "instance"),
            "NDCG_MAX_DECOMPRESSED_BYTES": 8 * GB,
        }
    )
    ensure_migrate(app)
    return app


def sqlite_page_size(path: Path) -> int:
    """A SQLite file's page size (a copy prepared before the app's changed is made again)."""
    with closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])


def side_prepare(paths: dict[str, Path]) -> dict[str, Any]:
    """Build the SQLite test set with queries and qrels as judgments (not timed)."""
    from flask_migrate import upgrade

    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import User
    from ndcg_labeler.services import testsets
    from ndcg_labeler.services.imports import ImportFile, import_files
    from ndcg_labeler.sqlite import PAGE_SIZE

    target = paths["prepared"]
    if target.exists() and sqlite_page_size(target) == PAGE_SIZE:
        return {"prepared": str(target)}
    tmp = target.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    app = _app(tmp)
    t0 = time.perf_counter()
    with app.app_context():
        upgrade()
        db.session.add(User(username="bench", role="annotator", active=True))
        db.session.commit()
        test_set = testsets.create_test_set("bench", 3)
        import_files(
            test_set,
            queries=ImportFile.from_path(paths["queries"]),
            qrels=ImportFile.from_path(paths["qrels"]),
        )
        db.engine.dispose()
    tmp.rename(target)
    return {"prepared": str(target), "seconds": time.perf_counter() - t0}


def side_ours(paths: dict[str, Path], changes: int) -> dict[str, Any]:
    """Upload, first scoring, cold scoring, and re-scoring after single grade changes.

    numpy is first imported through our package here, as in the app: the package's process
    settings (numpy's huge pages, pyarrow's pool) are read when numpy and pyarrow load.
    """
    import sqlalchemy as sa

    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import Chunk, Query, TestSet, User
    from ndcg_labeler.services import labeling, live
    from ndcg_labeler.services import runs as run_service
    from ndcg_labeler.services.live import ScoreOptions, score_run, trec_eval_lines

    fresh_copy(paths["prepared"], paths["work"])
    app = _app(paths["work"])
    out: dict[str, Any] = {}
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet))
        t0, c0 = time.perf_counter(), time.process_time()
        run = run_service.upload_run(test_set, paths["run"], None, "bench", None)
        t1, c1 = time.perf_counter(), time.process_time()
        result = score_run(run, ScoreOptions(k=10))
        t2, c2 = time.perf_counter(), time.process_time()
        out["upload"] = t1 - t0
        out["first_scoring"] = t2 - t1
        out["cpu_upload"] = c1 - c0
        out["cpu_first_scoring"] = c2 - c1
        out["mean_ndcg_10"] = result.mean_ndcg
        out["entries"] = run.num_entries
        t3 = time.perf_counter()
        lines = trec_eval_lines(run, ScoreOptions(k=10))
        out["trec_output"] = time.perf_counter() - t3
        out["trec_lines"] = len(lines)
        # What another server process pays: nothing in memory, the stored scores read back.
        app.extensions.pop("ndcg_live_scores", None)
        t4 = time.perf_counter()
        score_run(run, ScoreOptions(k=10))
        out["cold_scoring"] = time.perf_counter() - t4
        tops = live.top_lists(run, 10)
        annotator = db.session.scalar(sa.select(User).where(User.username == "bench"))
        import numpy as np  # loaded by our package by now (see the docstring)

        rng = np.random.default_rng(SEED + 1)
        queries = list(db.session.scalars(sa.select(Query).where(Query.test_set_id == test_set.id)))
        times = []
        cpu_times = []
        for n in range(changes):
            query = queries[int(rng.integers(len(queries)))]
            docid = tops[query.id][int(rng.integers(10))]
            chunk = db.session.scalar(
                sa.select(Chunk).where(Chunk.test_set_id == test_set.id, Chunk.docid == docid)
            )
            if chunk is None:
                chunk = Chunk(test_set_id=test_set.id, docid=docid)
                db.session.add(chunk)
                db.session.commit()
            labeling.save_judgment(test_set, query, chunk, annotator, grade=n % 4)
            start, cpu = time.perf_counter(), time.process_time()
            rescored = score_run(run, ScoreOptions(k=10))
            times.append(time.perf_counter() - start)
            cpu_times.append(time.process_time() - cpu)
            assert rescored.labels_version == db.session.get(TestSet, test_set.id).labels_version
        out["rescore_times"] = times
        out["rescore_median"] = statistics.median(times)
        out["cpu_rescore_median"] = statistics.median(cpu_times)
        db.engine.dispose()
    return out


def side_pytrec(paths: dict[str, Path]) -> dict[str, Any]:
    """pytrec_eval the usual way: dicts from a Python loop, then evaluate ndcg_cut."""
    import pytrec_eval

    t0, c0 = time.perf_counter(), time.process_time()
    qrels: dict[str, dict[str, int]] = {}
    with open(paths["qrels"]) as fh:
        for line in fh:
            qid, _, docid, grade = line.split()
            qrels.setdefault(qid, {})[docid] = int(grade)
    t1 = time.perf_counter()
    run: dict[str, dict[str, float]] = {}
    with open(paths["run"]) as fh:
        for line in fh:
            qid, _, docid, _, score, _ = line.split()
            run.setdefault(qid, {})[docid] = float(score)
    t2, c2 = time.perf_counter(), time.process_time()
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"})
    results = evaluator.evaluate(run)
    t3, c3 = time.perf_counter(), time.process_time()
    mean = sum(r["ndcg_cut_10"] for r in results.values()) / len(results)
    return {
        "parse_qrels": t1 - t0,
        "parse_run": t2 - t1,
        "evaluate": t3 - t2,
        "cpu_parse": c2 - c0,
        "cpu_evaluate": c3 - c2,
        "mean_ndcg_10": mean,
    }


def side_ranx(paths: dict[str, Path]) -> dict[str, Any]:
    """ranx from the same files (only when it is installed)."""
    from ranx import Qrels, Run, evaluate

    t0 = time.perf_counter()
    qrels = Qrels.from_file(str(paths["qrels"]), kind="trec")
    run = Run.from_file(str(paths["run"]), kind="trec")
    t1 = time.perf_counter()
    evaluate(qrels, run, "ndcg@10")  # first call compiles (numba); not what we compare
    t2 = time.perf_counter()
    mean = evaluate(qrels, run, "ndcg@10")
    t3 = time.perf_counter()
    return {
        "parse": t1 - t0,
        "compile_and_evaluate": t2 - t1,
        "evaluate": t3 - t2,
        "mean_ndcg_10": float(mean),
    }


def run_side(side: str, args: argparse.Namespace) -> tuple[dict[str, Any], float]:
    """Run one side in a child process; returns its JSON result and peak RSS in bytes."""
    cmd = [
        sys.executable,
        "-m",
        "bench.run_bench",
        "--side",
        side,
        "--queries",
        str(args.queries),
        "--depth",
        str(args.depth),
        "--judged",
        str(args.judged),
        "--changes",
        str(args.changes),
    ]
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[1])
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"the {side} side failed (exit {child.returncode})")
    return json.loads(output.decode().strip().splitlines()[-1]), usage.ru_maxrss * 1024.0


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run one command as its own process: (wall seconds, peak RSS bytes, stdout)."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, cwd=ROOT)
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return wall, usage.ru_maxrss * 1024.0, output.decode()


def median_timed(cmd: list[str], env: dict[str, str], runs: int = 3) -> tuple[float, float, str]:
    """`_timed` `runs` times (each a new process): the median wall seconds (on a shared machine
    one process can take half as long again as the next), the largest peak RSS, and the first
    run's stdout."""
    timed = [_timed(cmd, env) for _ in range(runs)]
    return statistics.median(t[0] for t in timed), max(t[1] for t in timed), timed[0][2]


ROUNDS = 3  # the two-process figure and pytrec_eval's: medians of this many rounds


def fresh_copy(source: Path, target: Path) -> None:
    """`target` becomes a copy of the SQLite file `source`, with no stale -wal/-shm beside it
    (SQLite would replay an old write-ahead log into the copy)."""
    forget_sqlite(target)
    shutil.copy(source, target)


def forget_sqlite(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def upload_score_rounds(
    prepared: Path, work: Path, env: dict[str, str], run_file: Path, pytrec: list[str], name: str
) -> dict[str, Any]:
    """`flask run upload` then `flask run score --json` (on a fresh copy of `prepared` at
    `work` each time) and pytrec_eval's whole process, ROUNDS times interleaved.

    Returns per key (upload, score, pytrec) the median wall seconds, the largest peak RSS
    ("<key>_rss") and the first round's stdout ("<key>_text"), and "two": the median of upload +
    score. Medians, because a VM on a shared host can take half as long again for one process
    as for the next (it maps memory the host took back). `work` keeps the last round's run.
    """
    flask = [sys.executable, "-m", "flask", "--app", "app"]
    commands = {
        "upload": [*flask, "run", "upload", "bench", str(run_file), "--name", name],
        "score": [*flask, "run", "score", "bench", name, "--json"],
        "pytrec": pytrec,
    }
    rounds: dict[str, list[tuple[float, float, str]]] = {key: [] for key in commands}
    for _ in range(ROUNDS):
        fresh_copy(prepared, work)
        for key, command in commands.items():
            rounds[key].append(_timed(command, env))
    out: dict[str, Any] = {}
    for key, timed in rounds.items():
        out[key] = statistics.median(t[0] for t in timed)
        out[key + "_rss"] = max(t[1] for t in timed)
        out[key + "_text"] = timed[0][2]
    pairs = zip(rounds["upload"], rounds["score"], strict=True)
    out["two"] = statistics.median(upload[0] + score[0] for upload, score in pairs)
    return out


def pytrec_command(queries: int, depth: int, judged: int) -> list[str]:
    """pytrec_eval's parse + evaluate of the same files, as a process of its own."""
    side = [sys.executable, "-m", "bench.run_bench", "--side", "pytrec"]
    return [*side, "--queries", str(queries), "--depth", str(depth), "--judged", str(judged)]


def cli_side(paths: dict[str, Path], args: argparse.Namespace) -> dict[str, Any]:
    """What a user runs: `flask run upload` then `flask run score`, each a new process, and
    pytrec_eval's parse + evaluate as a whole process too (upload_score_rounds); then `flask
    run list` and `flask --help`."""
    work = paths["work"].with_name("cli.sqlite3")
    # As an installed app runs: with bytecode caches (see bench/cli.py, which also warms them).
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "DATABASE_URL": f"sqlite:///{work}",
        "NDCG_INSTANCE_PATH": str(DATA / "instance"),
        "NDCG_DEMO": "0",
        "NDCG_MAX_DECOMPRESSED_MB": str(8 * 1024),
    }
    pytrec = pytrec_command(args.queries, args.depth, args.judged)
    out = upload_score_rounds(paths["prepared"], work, env, paths["run"], pytrec, "cli")
    out["mean_ndcg_10"] = json.loads(out["score_text"])["mean_ndcg"]
    flask = [sys.executable, "-m", "flask", "--app", "app"]
    out["list"], out["list_rss"], _ = _timed([*flask, "run", "list", "bench"], env)
    out["help"], out["help_rss"], _ = _timed([*flask, "--help"], env)
    forget_sqlite(work)
    return out


def machine() -> str:
    """nproc and CPU model, for the report."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}"


def _ranx_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("ranx") is not None


def report(args: argparse.Namespace) -> None:
    """Generate the data, run every side in its own process, print times, memory and ratios."""
    paths = data_paths(args.queries, args.depth, args.judged)
    t0 = time.perf_counter()
    generate(paths, args.queries, args.depth, args.judged)
    print(
        f"data: {args.queries} queries x {args.depth} chunks, ~{args.judged} judged per query "
        f"({time.perf_counter() - t0:.1f} s to generate or find) in {DATA}"
    )
    run_side("prepare", args)
    ours, ours_rss = run_side("ours", args)
    theirs, theirs_rss = run_side("pytrec", args)
    ours_total = ours["upload"] + ours["first_scoring"]
    theirs_total = theirs["parse_qrels"] + theirs["parse_run"] + theirs["evaluate"]
    print(f"machine: {machine()}")
    print(
        f"command: {' '.join([Path(sys.executable).name, '-m', 'bench.run_bench', *sys.argv[1:]])}"
    )
    print()
    print("ours (ndcg-labeler)")
    print(f"  upload (parse, validate, rank, store)   {ours['upload']:8.2f} s")
    print(f"  first scoring (NDCG@10; all cutoffs)    {ours['first_scoring']:8.2f} s")
    print(f"  upload + first scoring                  {ours_total:8.2f} s")
    print(f"  cold scoring from the DB (new process)  {ours['cold_scoring']:8.2f} s")
    print(f"  trec_eval -q output, all cutoffs        {ours['trec_output']:8.2f} s")
    print(
        f"  re-score after one grade change, median {1000 * ours['rescore_median']:8.2f} ms"
        f"  (of {len(ours['rescore_times'])}: "
        + ", ".join(f"{1000 * t:.1f}" for t in ours["rescore_times"])
        + " ms)"
    )
    print(f"  peak memory (max RSS)                   {ours_rss / GB:8.2f} GB")
    print(f"  mean NDCG@10                            {ours['mean_ndcg_10']:.6f}")
    print("pytrec_eval (pytrec-eval-terrier)")
    print(
        "  parse qrels + run into dicts            "
        f"{theirs['parse_qrels'] + theirs['parse_run']:8.2f} s"
    )
    print(f"  evaluate ndcg_cut (all cutoffs)         {theirs['evaluate']:8.2f} s")
    print(f"  parse + evaluate                        {theirs_total:8.2f} s")
    print(f"  peak memory (max RSS)                   {theirs_rss / GB:8.2f} GB")
    print(f"  mean NDCG@10 (over judged queries)      {theirs['mean_ndcg_10']:.6f}")
    if _ranx_installed():
        ranx, ranx_rss = run_side("ranx", args)
        print("ranx")
        print(f"  parse                                   {ranx['parse']:8.2f} s")
        print(f"  evaluate ndcg@10 (after compiling)      {ranx['evaluate']:8.2f} s")
        print(f"  peak memory (max RSS)                   {ranx_rss / GB:8.2f} GB")
        print(
            "  ours / ranx (parse + evaluate)          "
            f"{ours_total / (ranx['parse'] + ranx['evaluate']):8.2f}"
        )
    else:
        print("ranx: not installed (optional), skipped")
    cli = cli_side(paths, args)
    two = cli["two"]
    print(
        "as a user runs them: each command a new process (wall time, peak RSS; upload, first "
        f"score and pytrec_eval: medians of {ROUNDS} rounds)"
    )
    for label, key in (
        ("flask --help", "help"),
        ("flask run upload", "upload"),
        ("flask run score --json (first)", "score"),
        ("flask run list", "list"),
        ("pytrec_eval parse + evaluate, process", "pytrec"),
    ):
        print(f"  {label:<40}{cli[key]:8.2f} s  {cli[key + '_rss'] / MB:6.0f} MB")
    print(f"  mean NDCG@10 from `run score --json`    {cli['mean_ndcg_10']:.6f}")
    print()
    ratio = ours_total / theirs_total
    cpu_ours = ours["cpu_upload"] + ours["cpu_first_scoring"]
    cpu_theirs = theirs["cpu_parse"] + theirs["cpu_evaluate"]
    print(
        f"CPU time (all threads): ours {cpu_ours:.2f} s (upload {ours['cpu_upload']:.2f}, "
        f"first scoring {ours['cpu_first_scoring']:.2f}), pytrec_eval {cpu_theirs:.2f} s; "
        f"re-score {1000 * ours['cpu_rescore_median']:.2f} ms"
    )
    print(
        f"load average at the end: {os.getloadavg()[0]:.2f} (wall times suffer on a busy machine)"
    )
    print()
    checks = [
        (
            "ours / pytrec_eval, upload+scoring vs parse+evaluate",
            f"{ratio:.2f}",
            "<= 0.5",
            ratio <= 0.5,
        ),
        (
            "re-score after one grade change",
            f"{1000 * ours['rescore_median']:.2f} ms",
            "<= 5 ms",
            ours["rescore_median"] <= 0.005,
        ),
        ("peak memory, ours", f"{ours_rss / GB:.2f} GB", "<= 1.5 GB", ours_rss <= 1.5 * GB),
        ("peak memory, ours / pytrec_eval", f"{ours_rss / theirs_rss:.2f}", "", True),
        ("ours / pytrec_eval in CPU time", f"{cpu_ours / cpu_theirs:.2f}", "", True),
    ]
    two_ratio = two / cli["pytrec"]
    checks += [
        (
            "run upload + run score (2 processes) / pytrec_eval's",
            f"{two_ratio:.2f}",
            "<= 0.5",
            two_ratio <= 0.5,
        ),
        ("flask --help (start-up)", f"{cli['help']:.2f} s", "<= 0.4 s", cli["help"] <= 0.4),
        ("flask run list", f"{cli['list']:.2f} s", "<= 1 s", cli["list"] <= 1.0),
        (
            "flask run list, peak RSS",
            f"{cli['list_rss'] / MB:.0f} MB",
            "<= 300 MB",
            cli["list_rss"] <= 300 * MB,
        ),
        (
            "first run score in a new process",
            f"{cli['score']:.2f} s",
            "<= 1 s",
            cli["score"] <= 1.0,
        ),
        (
            "first run score, peak RSS",
            f"{cli['score_rss'] / MB:.0f} MB",
            "<= 600 MB",
            cli["score_rss"] <= 600 * MB,
        ),
    ]
    for name, value, target, ok in checks:
        verdict = "" if not target else ("met" if ok else "MISSED")
        print(f"{name:<54} {value:>10} {target:>9} {verdict}")


def main() -> None:
    """Parse the command line and run the report or one side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="700 queries instead of 7,000")
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--judged", type=int, default=40)
    parser.add_argument("--changes", type=int, default=9, help="grade changes to time")
    parser.add_argument(
        "--side", choices=["prepare", "ours", "pytrec", "ranx"], help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.queries is None:
        args.queries = 700 if args.small else 7000
    if args.side is None:
        report(args)
        return
    paths = data_paths(args.queries, args.depth, args.judged)
    if args.side == "prepare":
        result = side_prepare(paths)
    elif args.side == "ours":
        result = side_ours(paths, args.changes)
    elif args.side == "pytrec":
        result = side_pytrec(paths)
    else:
        result = side_ranx(paths)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
