"""Dashboard page timings on the 7,000-query benchmark run (a script, not a test).

`python -m bench.dashboard_pages` copies the benchmark's prepared SQLite test set (7,000
queries, ~40 graded chunks each; `make bench` creates it), uploads the 7,000 x 1,000 run and a
second run derived from it (top 100 of each query with perturbed scores), and times every
dashboard page through the Flask test client: the first request (for the first pages: loading
the runs and grades into this process's cache) and warm (median of the 5 next). The comparison's
bootstrap intervals and tests are cached by the exact scores, so only their first request
computes them.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.run_bench import SEED, data_paths

PASSWORD = "bench-admin-pw-1"


def derived_run(
    source: Path, target: Path, depth: int = 100, seed: int = SEED + 1, tag: str = "noisy"
) -> None:
    """The top `depth` of each query of `source` with noisy scores (a "second retriever");
    another `seed` gives another retriever."""
    rng = np.random.default_rng(seed)
    with source.open() as src, target.open("w") as out:
        current, kept = None, 0
        for line in src:
            qid, _, docid, rank, score, _ = line.split()
            if qid != current:
                current, kept = qid, 0
            if kept >= depth:
                continue
            kept += 1
            noisy = float(score) + rng.normal(0.0, 4.0)
            out.write(f"{qid} Q0 {docid} {rank} {noisy:.4f} {tag}\n")


def timed(
    client, url: str, method: str = "get", repeat: int = 5, **kwargs
) -> tuple[float, float, int]:
    """(first, median of the next `repeat`) in milliseconds, and the response size."""
    call = getattr(client, method)
    t0 = time.perf_counter()
    response = call(url, **kwargs)
    first = (time.perf_counter() - t0) * 1000
    assert response.status_code in (200, 302), (url, response.status_code, response.data[:300])
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call(url, **kwargs)
        times.append((time.perf_counter() - t0) * 1000)
    return first, statistics.median(times) if times else first, len(response.data)


def main() -> None:
    """Upload both runs and print one line per page."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=7000)
    args = parser.parse_args()
    paths = data_paths(args.queries, 1000, 40)
    if not paths["prepared"].exists():
        sys.exit(f"{paths['prepared']} is missing: run `make bench` first")
    work = Path(tempfile.mkdtemp(prefix="ndcg-dash-bench-"))
    try:
        db_path = work / "dash.sqlite3"
        shutil.copy(paths["prepared"], db_path)
        second = work / "noisy.trec"
        derived_run(paths["run"], second)
        run_pages(db_path, work, paths["run"], second)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def give_text(test_set_id: int, run_id: int, top: int = 20) -> int:
    """The prepared set has no corpus: give the top chunks of a run a text (for grading/pooling)."""
    import sqlalchemy as sa

    from ndcg_labeler.extensions import db
    from ndcg_labeler.formats import decode_docids
    from ndcg_labeler.models import Chunk, RunQuery

    wanted: set[str] = set()
    for blob in db.session.scalars(sa.select(RunQuery.docids).where(RunQuery.run_id == run_id)):
        wanted.update(decode_docids(blob).decode().split("\n")[:top])
    table = Chunk.__table__
    existing = set(
        db.session.scalars(sa.select(table.c.docid).where(table.c.test_set_id == test_set_id))
    )
    new = sorted(wanted - existing)
    rows = [{"test_set_id": test_set_id, "docid": d, "text": f"Benchmark chunk {d}."} for d in new]
    for start in range(0, len(rows), 5000):
        db.session.execute(sa.insert(table), rows[start : start + 5000])
    old = sorted(wanted & existing)
    for start in range(0, len(old), 5000):
        db.session.execute(
            sa.update(table)
            .where(table.c.test_set_id == test_set_id, table.c.docid.in_(old[start : start + 5000]))
            .values(text="Benchmark chunk (judged).")
        )
    db.session.commit()
    return len(wanted)


def run_pages(db_path: Path, work: Path, first_run: Path, second_run: Path) -> None:
    """Set up, then time the pages."""
    import sqlalchemy as sa

    from ndcg_labeler.extensions import db
    from ndcg_labeler.factory import create_app
    from ndcg_labeler.models import Chunk, Query, TestSet, User
    from ndcg_labeler.services import runs as run_service

    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{db_path}",
            "INSTANCE_PATH": str(work),
            "SECRET_KEY": "bench",
            "NDCG_DEMO": False,
            "WTF_CSRF_ENABLED": False,
        }
    )
    with app.app_context():
        admin = User(username="bench-admin", role="admin", active=True)
        admin.set_password(PASSWORD)
        db.session.add(admin)
        db.session.commit()
        test_set = db.session.scalar(sa.select(TestSet))
        t0 = time.perf_counter()
        a = run_service.upload_run(test_set, first_run, None, "bm25", admin)
        upload_a = time.perf_counter() - t0
        t0 = time.perf_counter()
        b = run_service.upload_run(test_set, second_run, None, "noisy", admin)
        upload_b = time.perf_counter() - t0
        corpus = give_text(test_set.id, a.id)
        print(f"corpus text given to {corpus} chunks (the top 20 of bm25 for every query)")
        ts, ra, rb = test_set.id, a.id, b.id
        queries = db.session.scalar(sa.select(sa.func.count()).where(Query.test_set_id == ts))
        q = db.session.scalar(sa.select(Query.id).where(Query.test_set_id == ts).limit(1))
        db.session.remove()
    print(
        f"test set: {queries} queries; upload bm25 (1,000/query) {upload_a:.1f} s, "
        f"noisy (100/query) {upload_b:.1f} s"
    )
    client = app.test_client()
    client.post("/login", data={"username": "bench-admin", "password": PASSWORD})
    base = f"/test-sets/{ts}/dashboard"
    pages = [
        ("overview", f"{base}/"),
        ("overview k=5 exp gain", f"{base}/?k=5&gain=exp"),
        ("run table (gap desc, page 1)", f"{base}/runs/{ra}"),
        ("run table sorted by ndcg asc", f"{base}/runs/{ra}?sort=ndcg&dir=asc"),
        ("run table sorted by query text", f"{base}/runs/{ra}?sort=query&dir=asc"),
        ("run table text filter", f"{base}/runs/{ra}?q=q0123"),
        ("run table band=poor, page 20", f"{base}/runs/{ra}?band=poor&page=20"),
        ("run table fragment (live refresh)", f"{base}/runs/{ra}/_table"),
        ("drill-down", f"{base}/runs/{ra}/queries/{q}/"),
        ("live check", f"{base}/live?since=0.0"),
        ("compare bm25 vs noisy", f"{base}/compare/?run={ra}&run={rb}"),
        ("compare statistics (CI + tests)", f"{base}/compare/_stats?run={ra}&run={rb}"),
        ("pool preview depth 10, both runs", f"{base}/pool/?depth=10&run={ra}&run={rb}"),
        ("export run CSV", f"{base}/export/runs/{ra}/queries.csv"),
        ("export run JSON", f"{base}/export/runs/{ra}/queries.json"),
        ("export trec_eval -q", f"{base}/export/runs/{ra}/trec_eval.txt"),
        ("export compare JSON", f"{base}/export/compare.json?run={ra}&run={rb}"),
    ]
    print(f"{'page':<36} {'first ms':>9} {'warm ms':>9} {'KB':>7}")
    for name, url in pages:
        first, warm, size = timed(client, url)
        print(f"{name:<36} {first:>9.0f} {warm:>9.0f} {size / 1024:>7.0f}")
    # Grade an unjudged chunk of the drill-down, then the table re-scores one query only.
    html = client.get(f"{base}/runs/{ra}/queries/{q}/").get_data(as_text=True)
    chunk_id = int(re.search(r'name="chunk_id" value="(\d+)"', html).group(1))
    t0 = time.perf_counter()
    response = client.post(
        f"{base}/runs/{ra}/queries/{q}/grade",
        data={"chunk_id": chunk_id, "grade": 2},
        headers={"HX-Request": "true"},
    )
    grade_ms = (time.perf_counter() - t0) * 1000
    assert response.status_code == 200
    t0 = time.perf_counter()
    client.get(f"{base}/runs/{ra}/_table")
    after_ms = (time.perf_counter() - t0) * 1000
    print(f"{'grade in drill-down (htmx)':<36} {grade_ms:>9.0f}")
    print(f"{'run table fragment after that grade':<36} {after_ms:>9.0f}")
    with app.app_context():
        assert db.session.get(Chunk, chunk_id) is not None
        db.engine.dispose()


if __name__ == "__main__":
    main()
