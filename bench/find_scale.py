"""Chunk and query list search at scale (a script, not a test).

`python -m bench.find_scale [--chunks 500000] [--url URL]` builds a test set of N chunks of
about 60 words each (and N/70 queries) through services/_db.insert_many, then times the list
pages' service calls (testsets.chunks_page / queries_page, first page of 50 with its total):
natural order, a rare word, a common word, a docid prefix and a grade-state filter, each
cold (first call) and warm (median of 5). SQLite in a temporary directory unless --url names
an empty database. The search: docids by prefix (index range) and words of titles and texts
(full-text: SQLite FTS5 or PostgreSQL's GIN index, migration 0010_chunk_search).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

_TEXT = (
    "leave parental sick pay policy expense travel claim approval manager remote office "
    "holiday benefit pension salary review training laptop security password badge parking "
    "canteen contract notice overtime bonus insurance dental vision relocation visa"
)
WORDS = _TEXT.split()


def _build(chunks: int) -> int:
    from ndcg_labeler.extensions import db
    from ndcg_labeler.formats import natural_key
    from ndcg_labeler.models import Chunk, Query
    from ndcg_labeler.services import testsets
    from ndcg_labeler.services._db import insert_many

    test_set = testsets.create_test_set("Find bench", 3)
    db.session.commit()
    rng = random.Random(7)
    rows = []
    for j in range(chunks):
        text = " ".join(rng.choice(WORDS) for _ in range(60))
        if j % 50_000 == 0:
            text += " zebracorn"  # a rare word: 1 chunk in 50,000
        rows.append((test_set.id, f"doc-{j}", f"Chunk {j}", text, natural_key(f"doc-{j}")))
    insert_many(Chunk.__table__, ("test_set_id", "docid", "title", "text", "sort_key"), rows)
    n_queries = max(1, chunks // 70)
    queries = [
        (test_set.id, f"q{i}", f"{rng.choice(WORDS)} {rng.choice(WORDS)}", natural_key(f"q{i}"))
        for i in range(n_queries)
    ]
    insert_many(Query.__table__, ("test_set_id", "qid", "text", "sort_key"), queries)
    db.session.commit()
    return test_set.id


def _time(call) -> tuple[float, float, int]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    found = call()
    cold = time.perf_counter() - started
    warm = []
    for _ in range(5):
        started = time.perf_counter()
        call()
        warm.append(time.perf_counter() - started)
    return cold * 1000, statistics.median(warm) * 1000, int(found.total or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=500_000)
    parser.add_argument("--url", default=None)
    args = parser.parse_args()
    from flask_migrate import upgrade

    from ndcg_labeler.extensions import db, ensure_migrate
    from ndcg_labeler.factory import create_app
    from ndcg_labeler.models import TestSet
    from ndcg_labeler.services import testsets

    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'find.sqlite3'}"
        app = create_app({"SQLALCHEMY_DATABASE_URI": url, "NDCG_DEMO": False, "INSTANCE_PATH": tmp})
        ensure_migrate(app)
        with app.app_context():
            upgrade()
            started = time.perf_counter()
            ts_id = _build(args.chunks)
            took, backend = time.perf_counter() - started, url.split(":")[0]
            print(f"built {args.chunks:,} chunks in {took:.1f} s ({backend})")
            test_set = db.session.get_one(TestSet, ts_id)
            cases = [
                ("chunks, natural order", lambda: testsets.chunks_page(test_set, 1)),
                (
                    "chunks, rare word",
                    lambda: testsets.chunks_page(test_set, 1, search="zebracorn"),
                ),
                (
                    "chunks, common word",
                    lambda: testsets.chunks_page(test_set, 1, search="pension"),
                ),
                (
                    "chunks, docid prefix",
                    lambda: testsets.chunks_page(test_set, 1, search="doc-4999"),
                ),
                ("chunks, ungraded", lambda: testsets.chunks_page(test_set, 1, state="ungraded")),
                ("queries, natural order", lambda: testsets.queries_page(test_set, 1)),
                ("queries, word", lambda: testsets.queries_page(test_set, 1, search="visa")),
            ]
            print(f"{'what':<26} {'cold ms':>9} {'warm ms':>9} {'found':>9}")
            for label, call in cases:
                cold, warm, found = _time(call)
                print(f"{label:<26} {cold:>9.0f} {warm:>9.0f} {found:>9,}")


if __name__ == "__main__":
    main()
