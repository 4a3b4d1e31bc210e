"""Run fusion at scale: `fuse_runs` over two runs of 7,000 queries x 1,000 entries, old vs new.

`python -m bench.fusion [--old REV]` uses bench.run_bench's data (generated and prepared when
missing): run A is bench/data's 7,000 x 1,000 TREC run; run B (made once, seeded) keeps about
60% of A's docids per query, replaces the others with new ones and scores them afresh, so the
two runs overlap partly, as runs worth fusing do. Both are uploaded once into a copy of the
prepared SQLite test set under /tmp; every timing then works on a fresh copy of that file.

For RRF and CombMNZ it times `fuse_runs` (wall seconds, upload and first scoring included, as a
user waits for them) with today's code and with the code of git revision REV (default: the
parent of the commit that made fusion vectorised, i.e. `main` before this change), loaded from
git into this process, and checks that both stored the same run: the same ranked lists (docids,
order, bit-identical scores), the same sha256 of the TREC text and the same upload report.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np

from bench.run_bench import DATA, ROOT, SEED, _app, data_paths, generate, run_side

WORK = Path("/tmp/ndcg-bench-fusion")


def _make_run_b(run_a: Path, target: Path) -> None:
    """Run B: ~60% of A's docids per query kept, the rest new ("x" + A's id), scores redrawn."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ndcg_labeler.formats import read_run

    parsed = read_run(str(run_a))
    rng = np.random.default_rng(SEED + 1)
    n = int(parsed.offsets[-1])
    counts = np.diff(parsed.offsets)
    docids = parsed.docid_array

    def text(value: str) -> pa.Scalar:
        return pa.scalar(value, pa.large_string())

    fresh = pc.binary_join_element_wise(text("x"), docids, text(""))
    docids = pc.if_else(pa.array(rng.random(n) < 0.6), docids, fresh)
    qids = pa.array(parsed.qids, pa.large_string()).take(
        pa.array(np.repeat(np.arange(len(parsed.qids)), counts))
    )
    scores = pc.cast(pa.array(np.round(rng.random(n) * 20.0, 3)), pa.large_string())
    lines = pc.binary_join_element_wise(
        qids, text("Q0"), docids, text("0"), scores, text("b\n"), text(" ")
    )
    with open(target, "wb") as out:
        for chunk in lines.chunks if hasattr(lines, "chunks") else [lines]:
            offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64)[: len(chunk) + 1]
            out.write(chunk.buffers()[2].to_pybytes()[offsets[0] : offsets[-1]])


def prepare(args: argparse.Namespace) -> Path:
    """/tmp/ndcg-bench-fusion/base.sqlite3: the prepared test set with runs A and B."""
    base = WORK / "base.sqlite3"
    if base.exists():
        return base
    paths = data_paths(args.queries, args.depth, args.judged)
    generate(paths, args.queries, args.depth, args.judged)
    if not paths["prepared"].exists():
        run_side("prepare", argparse.Namespace(**vars(args), changes=1))
    WORK.mkdir(parents=True, exist_ok=True)
    run_b = WORK / "run-b.trec"
    if not run_b.exists():
        _make_run_b(paths["run"], run_b)
    tmp = WORK / "base.tmp"
    shutil.copy(paths["prepared"], tmp)
    app = _app(tmp)
    from ndcg_labeler.extensions import db
    from ndcg_labeler.services import runs as run_service
    from ndcg_labeler.services import testsets

    with app.app_context():
        test_set = testsets.get_by_ref("bench")
        run_service.upload_run(test_set, str(paths["run"]), None, "A", None)
        run_service.upload_run(test_set, str(run_b), None, "B", None)
        db.engine.dispose()
    with sqlite3.connect(tmp) as con:  # fold the WAL into the file before renaming it
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    tmp.rename(base)
    return base


def _old_module(rev: str) -> ModuleType:
    """services/runs/fusion.py as it was at `rev`, loaded as a sibling of today's module."""
    source = subprocess.run(
        ["git", "show", f"{rev}:ndcg_labeler/services/runs/fusion.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    name = "ndcg_labeler.services.runs.bench_old_fusion"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "ndcg_labeler.services.runs"
    sys.modules[name] = module
    exec(compile(source, f"{rev}:fusion.py", "exec"), module.__dict__)
    return module


def measure(args: argparse.Namespace) -> None:
    base = prepare(args)
    work = WORK / "work.sqlite3"
    shutil.copy(base, work)
    app = _app(work)
    from ndcg_labeler.extensions import db
    from ndcg_labeler.services import runs as run_service
    from ndcg_labeler.services import testsets

    old = _old_module(args.old)
    versions = {"old": old.fuse_runs, "new": run_service.fuse_runs}
    with app.app_context():
        test_set = testsets.get_by_ref("bench")
        inputs = [run_service.get_run(test_set, n) for n in ("A", "B")]
        print(f"fusing runs A and B: {sum(r.num_entries for r in inputs):,} entries")
        for method in args.methods:
            made = {}
            for version in args.order:
                start = time.perf_counter()
                run = versions[version](test_set, inputs, f"{version}-{method}", None, method)
                seconds = time.perf_counter() - start
                made[version] = run
                print(f"{method:8} {version}: {seconds:6.2f} s  ({run.num_entries:,} stored)")
            if len(made) == 2:
                old_run, new_run = made["old"], made["new"]
                same = run_service.ranked_lists(old_run) == run_service.ranked_lists(new_run)
                same_bits = _score_bits(old_run.id) == _score_bits(new_run.id)
                same_sha = (old_run.sha256, old_run.format) == (new_run.sha256, new_run.format)
                same_report = {**old_run.report, "filename": ""} == {
                    **new_run.report,
                    "filename": "",
                }
                print(
                    f"{method:8} same ranked lists: {same}, same score bits: {same_bits}, "
                    f"same sha256 and format: {same_sha}, same report: {same_report}"
                )
                if not (same and same_bits and same_sha and same_report):
                    raise SystemExit("the new fusion stored a different run")
        db.engine.dispose()


def _score_bits(run_id: int) -> list[tuple[int, bytes, bytes]]:
    """Every stored row of a run as bytes: (query id, docids blob, float64 score bytes)."""
    import sqlalchemy as sa

    from ndcg_labeler.extensions import db
    from ndcg_labeler.formats import decode_ranked
    from ndcg_labeler.models import RunQuery

    rows = db.session.execute(
        sa.select(RunQuery.query_id, RunQuery.docids, RunQuery.scores)
        .where(RunQuery.run_id == run_id)
        .order_by(RunQuery.query_id)
    )
    # Decoded: either storage encoding (formats.run_storage) compares by content.
    out = []
    for q, d, s in rows:
        text, values = decode_ranked(d, s)
        out.append((q, text, values.tobytes()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--judged", type=int, default=40)
    parser.add_argument("--old", default="main", help="git revision of the old fusion")
    parser.add_argument("--methods", nargs="+", default=["rrf", "combmnz"])
    parser.add_argument("--order", nargs="+", default=["old", "new"], choices=["old", "new"])
    args = parser.parse_args()
    print(f"data: {DATA}; work files: {WORK}")
    measure(args)


if __name__ == "__main__":
    main()
