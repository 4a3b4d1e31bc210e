"""Many-runs benchmark (issue 30, items 1 and 2): run lists that do not grow with the run count.

`python -m bench.many_runs [--small] [--queries Q] [--runs N] [--depth D] [--url URL]` builds,
in a temporary directory (SQLite there, or the EMPTY database `--url` names, e.g. PostgreSQL),
a test set of Q queries with graded qrels (8 judged chunks per query, grades 0-3), uploads
three runs of depth D through the upload service (so each has its stored scores and stored
mean NDCG@10, as any uploaded run has), then clones them in bulk (INSERT ... SELECT of the run,
its ranked lists and its stored scores) to N runs with spread means (on PostgreSQL, then
ANALYZE, as autovacuum would soon after). It prints one table:

- each page (overview, runs page, runs page sorted best at page 3, compare of two runs, the
  API's run list): cold, the first request in a freshly started process (the app created and
  a session set before the clock starts; the OS file cache is warm), and warm, the median of
  five more requests in that process (Flask's test client: no network or server in between);
- `flask run list SET` as a user runs it, its own process, the median of three, with its peak
  RSS (ru_maxrss read with wait4);
- the storage: bytes per ranked entry of the stored lists, the stored scores per run, and
  `flask run archive` (retention) of one run to its top 10: time and bytes after (lists and
  stored scores); beside the lengths written, what the database keeps (PostgreSQL:
  pg_column_size after TOAST; both: the tables' pages per run).

`--small`: 1,000 queries x 60 runs. The machine is shared: the load is printed at the end.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.cli import FLASK
from bench.run_bench import MB, ROOT, SEED, machine, median_timed

SET = "many"
ADMIN = "bench-admin"
BASES = 3
WARM = 5
TARGET_WARM_MS = 300
TARGET_COLD_MS = 1000
TARGET_LIST_S = 0.5
TARGET_LIST_MB = 150


def _app(url: str, instance: Path):  # type: ignore[no-untyped-def]
    from ndcg_labeler.factory import create_app

    return create_app(
        {
            "SQLALCHEMY_DATABASE_URI": url,
            "NDCG_DEMO": False,
            "INSTANCE_PATH": str(instance),
            "SECRET_KEY": "bench-many-runs",
            "NDCG_SECURE_COOKIES": False,
        }
    )


def _run_text(queries: list[str], depth: int, rng: random.Random) -> bytes:
    """A TREC run: per query, its judged chunks and others at random ranks, 6-decimal scores."""
    lines = []
    for qid in queries:
        docs = [f"{qid}-d{n}" for n in range(8)] + [f"{qid}-x{n}" for n in range(depth)]
        rng.shuffle(docs)
        for rank, docid in enumerate(docs[:depth], start=1):
            lines.append(f"{qid} Q0 {docid} {rank} {1000 - rank + rng.random():.6f} bench\n")
    return "".join(lines).encode()


def build(url: str, instance: Path, queries: int, runs: int, depth: int) -> dict[str, Any]:
    """The test set, the admin with a token, BASES uploaded runs and their bulk clones."""
    import sqlalchemy as sa
    from flask_migrate import upgrade

    from ndcg_labeler.extensions import db, ensure_migrate
    from ndcg_labeler.models import Run, RunQuery, RunScore, User, utcnow
    from ndcg_labeler.services import imports, testsets
    from ndcg_labeler.services import runs as run_service
    from ndcg_labeler.services.accounts import create_token

    rng = random.Random(SEED)
    app = _app(url, instance)
    ensure_migrate(app)
    started = time.perf_counter()
    with app.app_context():
        upgrade()
        admin = User(username=ADMIN, role="admin", active=True)
        admin.set_password("bench-many-runs")
        db.session.add(admin)
        db.session.commit()
        token = create_token(admin)
        test_set = testsets.create_test_set(SET, 3)
        qids = [f"q{n:05d}" for n in range(queries)]
        qrels = "".join(f"{q} 0 {q}-d{n} {rng.randint(0, 3)}\n" for q in qids for n in range(8))
        imports.import_files(
            test_set,
            queries=imports.ImportFile(
                io.BytesIO("".join(f"{q}\tquery {q}\n" for q in qids).encode()), "q.tsv"
            ),
            qrels=imports.ImportFile(io.BytesIO(qrels.encode()), "labels.qrels"),
        )
        bases = [
            run_service.upload_run(
                test_set, io.BytesIO(_run_text(qids, depth, rng)), f"b{n}.trec", f"base-{n}", None
            )
            for n in range(BASES)
        ]
        base_ids = [(run.id, run.mean_ndcg or 0.0) for run in bases]
        ts_id = test_set.id
        uploaded = time.perf_counter() - started
        r, rq, rs = Run.__table__, RunQuery.__table__, RunScore.__table__
        copy_run = [c.name for c in r.columns if c.name not in ("id", "name", "uploaded_at")]
        copy_run = [c for c in copy_run if c != "mean_ndcg"]
        start_at = utcnow()
        for n in range(runs - BASES):
            base, mean = base_ids[n % BASES]
            name = f"nightly-{n:04d}"
            picked = sa.select(
                *[r.c[c] for c in copy_run],
                sa.literal(name).label("name"),
                sa.literal(start_at + timedelta(minutes=n)).label("uploaded_at"),
                sa.literal(max(0.0, mean + rng.uniform(-0.05, 0.05))).label("mean_ndcg"),
            ).where(r.c.id == base)
            db.session.execute(
                r.insert().from_select([*copy_run, "name", "uploaded_at", "mean_ndcg"], picked)
            )
            new = db.session.scalar(sa.select(r.c.id).where(r.c.name == name))
            db.session.execute(
                rq.insert().from_select(
                    ["run_id", "query_id", "docids", "scores"],
                    sa.select(sa.literal(new), rq.c.query_id, rq.c.docids, rq.c.scores).where(
                        rq.c.run_id == base
                    ),
                )
            )
            score_cols = [c.name for c in rs.columns if c.name not in ("id", "run_id")]
            db.session.execute(
                rs.insert().from_select(
                    ["run_id", *score_cols],
                    sa.select(sa.literal(new), *[rs.c[c] for c in score_cols]).where(
                        rs.c.run_id == base
                    ),
                )
            )
            if n % 50 == 49:
                db.session.commit()
        db.session.commit()
        if db.engine.dialect.name == "postgresql":
            # Planner statistics, as autovacuum gathers them within a minute of a bulk load: a
            # page measured at once would otherwise be planned for empty tables (the grades'
            # join took 108 ms as nested loops on a fresh database, 41 ms after ANALYZE).
            with db.engine.connect() as connection:
                connection.execution_options(isolation_level="AUTOCOMMIT").execute(
                    sa.text("ANALYZE")
                )
        picks = list(db.session.scalars(sa.select(r.c.id).order_by(r.c.id).limit(2)))
        user_id = f"{admin.id}:{admin.session_token}"
        db.session.remove()
    return {
        "ts": ts_id,
        "token": token,
        "user": user_id,
        "pair": picks,
        "uploaded_s": uploaded,
        "cloned_s": time.perf_counter() - started - uploaded,
    }


def pages(built: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """What to ask: name -> (path, with the API token instead of a session)."""
    ts, (a, b) = built["ts"], built["pair"]
    return {
        "overview": (f"/test-sets/{ts}/dashboard/", False),
        "runs page": (f"/test-sets/{ts}/runs/", False),
        "runs page, best first, page 3": (f"/test-sets/{ts}/runs/?sort=best&page=3", False),
        "compare picker (one run chosen)": (f"/test-sets/{ts}/dashboard/compare/?run={a}", False),
        "compare of two runs": (f"/test-sets/{ts}/dashboard/compare/?run={a}&run={b}", False),
        "API run list": (f"/api/testsets/{ts}/runs", True),
    }


def page_side(url: str, instance: str, path: str, user: str, token: str) -> None:
    """In a fresh process: the page's first request (cold) and the median of WARM more."""
    app = _app(url, Path(instance))
    client = app.test_client()
    headers = {}
    if token:
        headers = {"Authorization": f"Bearer {token}"}
    else:
        with client.session_transaction() as session:
            session["_user_id"] = user
            session["_fresh"] = True
    times = []
    for _ in range(WARM + 1):
        start = time.perf_counter()
        response = client.get(path, headers=headers)
        times.append(time.perf_counter() - start)
        if response.status_code != 200:
            raise SystemExit(f"{path}: {response.status_code}")
    print(json.dumps({"cold": times[0], "warm": statistics.median(times[1:])}))


def _env(url: str, instance: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {
        **env,
        "DATABASE_URL": url,
        "NDCG_INSTANCE_PATH": str(instance),
        "NDCG_DEMO": "0",
        "NDCG_SECRET_KEY": "bench-many-runs",
        "NDCG_SECURE_COOKIES": "0",
    }


def list_side() -> None:
    """`flask run list` and, beside it, `flask run --help`: each its own process, the median of
    three (the environment names the database). `run --help` builds no app but imports every
    `run` subcommand's module for their help lines: no longer the start-up `run list` pays,
    which builds the app without its web layer (ndcg_labeler.factory)."""
    env = dict(os.environ)
    median_timed([*FLASK, "run", "--help"], env, 1)  # bytecode caches; not counted
    listed, listed_rss, _ = median_timed([*FLASK, "run", "list", SET], env)
    helped, helped_rss, _ = median_timed([*FLASK, "run", "--help"], env)
    out = {"list": listed, "list_rss": listed_rss, "help": helped, "help_rss": helped_rss}
    print(json.dumps(out))


def _table_bytes(connection: Any, tables: tuple[str, ...]) -> int:
    """What the tables take in the database file, indexes (and on PostgreSQL TOAST) included:
    pg_total_relation_size, or SQLite's dbstat pages of each table and its indexes."""
    import sqlalchemy as sa

    if connection.dialect.name == "postgresql":
        size = "SELECT pg_total_relation_size(CAST(:t AS regclass))"
        return sum(int(connection.execute(sa.text(size), {"t": t}).scalar_one()) for t in tables)
    names = sa.text(
        "SELECT name FROM sqlite_master WHERE tbl_name = :t AND type IN ('table', 'index')"
    )
    owned = [n for t in tables for n in connection.execute(names, {"t": t}).scalars()]
    pages = sa.text("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = :n")
    return sum(int(connection.execute(pages, {"n": n}).scalar_one()) for n in owned)


def storage(url: str, instance: Path) -> dict[str, float]:
    """Bytes of one run's ranked lists and stored scores, and archiving it to its top 10.

    The bytes are the stored values' lengths (what the encodings write, as on any database);
    beside them what the database really keeps: on PostgreSQL each value's pg_column_size (after
    TOAST's own compression), and on both the tables' pages divided by the runs they hold.
    """
    import sqlalchemy as sa

    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import Run, RunQuery, RunScore
    from ndcg_labeler.services import runs as run_service

    app = _app(url, instance)
    rq, rs = RunQuery.__table__, RunScore.__table__
    with app.app_context():
        # The first clone; with --runs 3 (no clones) the last uploaded run, which the pages
        # (measured before) compare neither: they compare the first two.
        run = db.session.scalar(sa.select(Run).where(Run.name == "nightly-0000"))
        if run is None:
            run = db.session.scalar(sa.select(Run).order_by(Run.id.desc()).limit(1))
        assert run is not None
        postgres = db.engine.dialect.name == "postgresql"
        stored = sa.func.pg_column_size if postgres else sa.func.length

        def sizes(run_id: int, size: Any = sa.func.length) -> tuple[int, int]:
            lists = size(rq.c.docids) + size(rq.c.scores)
            found = sa.select(sa.func.coalesce(sa.func.sum(lists), 0)).where(rq.c.run_id == run_id)
            kept = sa.select(sa.func.coalesce(sa.func.sum(size(rs.c.data)), 0)).where(
                rs.c.run_id == run_id
            )
            return int(db.session.scalar(found)), int(db.session.scalar(kept))

        before, entries = sizes(run.id), run.num_entries
        real_before = sizes(run.id, stored)
        runs = int(db.session.scalar(sa.select(sa.func.count()).select_from(Run)))
        tables = _table_bytes(db.session.connection(), ("run_query", "run_score"))
        db.session.commit()
        start = time.perf_counter()
        run_service.archive_run(run, 10)
        archived = time.perf_counter() - start
        after, real_after = sizes(run.id), sizes(run.id, stored)
        db.session.remove()
    return {
        "per_entry": before[0] / entries,
        "run_mb": before[0] / MB,
        "scores_mb": before[1] / MB,
        "archive_s": archived,
        "archived_mb": after[0] / MB,
        "archived_scores_mb": after[1] / MB,
        "archived_total_mb": sum(after) / MB,
        # What the database keeps: each value's stored size (PostgreSQL: after TOAST).
        "stored_mb": sum(real_before) / MB,
        "stored_archived_mb": sum(real_after) / MB,
        "tables_mb_per_run": tables / runs / MB,
        "database": 1.0 if postgres else 0.0,
    }


def storage_line(kept: dict[str, float], queries: int, depth: int) -> str:
    """The storage figures in words (the lengths written; then what the database keeps)."""
    where = "PostgreSQL pg_column_size" if kept["database"] else "SQLite value lengths"
    return (
        f"stored ranked lists: {kept['per_entry']:.1f} bytes per entry ({kept['run_mb']:.1f} MB "
        f"per run of {queries:,} × {depth:,}); stored scores (default setting): "
        f"{kept['scores_mb']:.2f} MB per run; `run archive --keep 10`: "
        f"{kept['archive_s']:.2f} s, then {kept['archived_total_mb']:.2f} MB "
        f"({kept['archived_mb']:.2f} lists + {kept['archived_scores_mb']:.2f} scores). "
        f"In the database ({where}): {kept['stored_mb']:.1f} MB per run, "
        f"{kept['stored_archived_mb']:.2f} MB archived; run_query + run_score pages: "
        f"{kept['tables_mb_per_run']:.1f} MB per run (before archiving)"
    )


def measure(url: str, instance: Path, queries: int, runs: int, depth: int) -> dict[str, Any]:
    """Build Q x N runs in the EMPTY database `url`, then time each page (cold and warm, a new
    process each), `flask run list` (from a small helper process) and the storage."""
    built = build(url, instance, queries, runs, depth)
    env = _env(url, instance)
    timed = {}
    for name, (path, api) in pages(built).items():
        cmd = [sys.executable, "-m", "bench.many_runs", "--page-side", url, str(instance),
               path, built["user"], built["token"] if api else ""]  # fmt: skip
        found = json.loads(
            subprocess.run(cmd, env=env, cwd=ROOT, check=True, capture_output=True).stdout
        )
        timed[name] = (found["cold"] * 1000, found["warm"] * 1000)
    # From a small helper process: a child's ru_maxrss starts from its parent's peak, and
    # this process grew while it built the runs (as bench.scale does it).
    helper = [sys.executable, "-m", "bench.many_runs", "--list-side"]
    listed = json.loads(
        subprocess.run(helper, env=env, cwd=ROOT, check=True, capture_output=True).stdout
    )
    return {"built": built, "pages": timed, "list": listed, "storage": storage(url, instance)}


def main() -> None:
    """Build, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="1,000 queries x 60 runs")
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--url", default=None, help="an EMPTY database (default: SQLite in tmp)")
    parser.add_argument("--page-side", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--list-side", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.list_side:
        list_side()
        return
    if args.page_side:
        page_side(*args.page_side)
        return
    if args.small:
        args.queries, args.runs = 1000, 60
    with tempfile.TemporaryDirectory() as tmp:
        instance = Path(tmp) / "instance"
        url = args.url or f"sqlite:///{Path(tmp) / 'many.sqlite3'}"
        print(f"building {args.queries:,} queries x {args.runs} runs of depth {args.depth}...",
              file=sys.stderr)  # fmt: skip
        found = measure(url, instance, args.queries, args.runs, args.depth)
        built, kept = found["built"], found["storage"]
        rows = []
        for name, (cold, warm) in found["pages"].items():
            ok = cold <= TARGET_COLD_MS and warm <= TARGET_WARM_MS
            rows.append((name, f"{cold:.0f} ms", f"{warm:.0f} ms", "cold ≤ 1 s, warm ≤ 300 ms",
                         "met" if ok else "MISSED"))  # fmt: skip
        listed = found["list"]
        wall, rss = listed["list"], listed["list_rss"]
        ok = wall <= TARGET_LIST_S and rss <= TARGET_LIST_MB * MB
        verdict = "met" if ok else "MISSED"
        rows.append(("`flask run list` (process, median of 3)", f"{wall:.2f} s",
                     f"{rss / MB:.0f} MB", "≤ 0.5 s, ≤ 150 MB", verdict))  # fmt: skip
        rows.append(("  beside it: `flask run --help` (all of `run`)", f"{listed['help']:.2f} s",
                     f"{listed['help_rss'] / MB:.0f} MB", "", ""))  # fmt: skip
        database = url.split(":", 1)[0]
        size = f"{args.queries:,} queries × {args.runs} runs (depth {args.depth}), {database}"
        print(f"\n{size}; built in {built['uploaded_s']:.0f} s (3 uploads) + "
              f"{built['cloned_s']:.0f} s (bulk clones); {machine()}\n")  # fmt: skip
        print("| what | cold / time | warm / RSS | target | met/MISSED |")
        print("| --- | --- | --- | --- | --- |")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        print(f"\n{storage_line(kept, args.queries, args.depth)}")
        print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
