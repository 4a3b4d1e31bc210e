"""Pooling at scale: the preview (plan) and the add, in process, and the browser's POST.

`python -m bench.pooling [--queries 7000] [--depth 50] [--runs 1 3] [--url URL]` builds, in a
temporary SQLite file (or the EMPTY database `--url` names; then give one --runs count), a test
set of QUERIES queries whose corpus holds every chunk the runs rank, one graded chunk per query,
and RUNS runs of depth DEPTH (run k ranks chunk d{i}_{(j + k) mod depth'} so the runs
overlap). For each run count it times:

- the pool page's preview (`plan_pool` over every run of the test set, coverage included);
- adding the pairs in one transaction (`add_pool`, what the job worker runs), and the preview
  again once they are queued;
- the browser's POST of the same pooling (queued as a job above NDCG_POOL_JOB_PAIRS) through
  the test client: what the browser waits for.

The issue's rule: the browser never waits more than 2 s; long work runs as a job.
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
from pathlib import Path

from bench.labeling_scale import _app


def _build(queries: int, depth: int, runs: int) -> tuple[int, list[int]]:
    """The test set and its runs (uploaded through the upload service)."""
    from ndcg_labeler.extensions import db
    from ndcg_labeler.formats import natural_key
    from ndcg_labeler.models import Chunk, Query
    from ndcg_labeler.services import imports, testsets
    from ndcg_labeler.services import runs as run_service
    from ndcg_labeler.services._db import insert_many

    test_set = testsets.create_test_set(f"pool-{runs}", 3)
    ts = test_set.id
    width = depth + runs
    insert_many(
        Query.__table__,
        ("test_set_id", "qid", "text", "sort_key"),
        [(ts, f"q{i}", f"query {i}", natural_key(f"q{i}")) for i in range(queries)],
    )
    insert_many(
        Chunk.__table__,
        ("test_set_id", "docid", "text", "sort_key"),
        [
            (ts, f"d{i}_{j}", "chunk text", natural_key(f"d{i}_{j}"))
            for i in range(queries)
            for j in range(width)
        ],
    )
    db.session.commit()
    qrels = "".join(f"q{i} 0 d{i}_0 2\n" for i in range(queries)).encode()
    imports.import_files(
        test_set, qrels=imports.ImportFile(io.BytesIO(qrels), "qrels.txt"), source="bench"
    )
    ids = []
    for k in range(runs):
        lines = "".join(
            f"q{i} Q0 d{i}_{(j + k) % width} {j + 1} {depth - j} run{k}\n"
            for i in range(queries)
            for j in range(depth)
        )
        run = run_service.upload_run(
            test_set, io.BytesIO(lines.encode()), "r.trec", f"run{k + 1}", None
        )
        ids.append(run.id)
    db.session.commit()
    return ts, ids


def measure(queries: int, depth: int, runs: int, url: str | None) -> dict[str, float]:
    """Seconds of the preview, the add, the preview after, and the browser POST."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-pool-"))
    app = _app(url or f"sqlite:///{tmp / 'pool.sqlite3'}", tmp)
    app.config["WTF_CSRF_ENABLED"] = False
    from flask_migrate import upgrade

    from ndcg_labeler.extensions import db, ensure_migrate
    from ndcg_labeler.models import Run, TestSet
    from ndcg_labeler.services import accounts, pooling

    with app.app_context():
        ensure_migrate(app)
        upgrade()
        accounts.create_user("admin", "bench-password-1", role="admin")
        ts, ids = _build(queries, depth, runs)
        test_set = db.session.get_one(TestSet, ts)
        chosen = [db.session.get_one(Run, i) for i in ids]
        t0 = time.perf_counter()
        plan = pooling.plan_pool(test_set, chosen, depth)
        preview = time.perf_counter() - t0
        t0 = time.perf_counter()
        added, _ = pooling.add_pool(test_set, chosen, depth)
        add = time.perf_counter() - t0
        t0 = time.perf_counter()
        pooling.plan_pool(test_set, chosen, depth)
        again = time.perf_counter() - t0
        db.session.remove()
    client = app.test_client()
    client.post("/login", data={"username": "admin", "password": "bench-password-1"})
    t0 = time.perf_counter()
    response = client.post(f"/test-sets/{ts}/dashboard/pool/", data={"depth": depth, "run": ids})
    post = time.perf_counter() - t0
    assert response.status_code == 302, response.status_code
    as_job = "/jobs/" in response.headers["Location"]
    return {
        "pairs": float(plan.to_add),
        "added": float(added),
        "preview": preview,
        "add": add,
        "again": again,
        "post": post,
        "job": float(as_job),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--runs", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--url", default=None, help="an EMPTY database (default: SQLite)")
    args = parser.parse_args()
    print(f"{'size':<28} {'new pairs':>10} {'preview':>8} {'add':>8} {'preview':>8} {'POST':>8}")
    print(f"{'':<28} {'':>10} {'':>8} {'(job)':>8} {'after':>8} {'':>8}")
    for runs in args.runs:
        found = measure(args.queries, args.depth, runs, args.url)
        size = f"{args.queries:,} q x depth {args.depth} x {runs} run{'s' if runs > 1 else ''}"
        post = f"{found['post']:.2f} s" + (" (job)" if found["job"] else "")
        print(
            f"{size:<28} {int(found['pairs']):>10,} {found['preview']:>6.2f} s"
            f" {found['add']:>6.2f} s {found['again']:>6.2f} s {post:>8}"
        )
    print(f"load average {os.getloadavg()[0]:.1f}; the browser waits <= 2 s: preview and POST")


if __name__ == "__main__":
    main()
