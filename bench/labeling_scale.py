"""Labeling and team-page timings at scale (a script, not a test).

`python -m bench.labeling_scale [--sizes 10000,100000,1000000] [--url URL]` builds, for each
pool size, a test set with 100 pairs per query through services/_db.insert_many (a tenth of the
pairs already answered once), counts it once (recount_pool), then times the labeling GET's
service work (next_pair + progress) and the grade save (save_for_pair), as p50/p95 over 200
requests of 20 annotators taking turns. Then agreement, people and the review queue's first
page at 10k/60k/200k graded judgments (5 raters per pair): cold (nothing stored) and warm
(stored figures, same labels version). SQLite in a temporary directory unless --url names a
database (it must be empty).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

RATERS = 5
JUDGMENT_COLUMNS = (
    "test_set_id",
    "query_id",
    "chunk_id",
    "annotator_id",
    "status",
    "grade",
    "note",
    "active_ms",
    "created_at",
    "updated_at",
)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _app(url: str, instance: Path):  # type: ignore[no-untyped-def]
    from ndcg_labeler.factory import create_app

    return create_app(
        {"SQLALCHEMY_DATABASE_URI": url, "NDCG_DEMO": False, "INSTANCE_PATH": str(instance)}
    )


def _pool(name: str, pairs: int, users: list[int], answered: float) -> int:
    """A test set of `pairs` pairs (100 per query) with a share answered once; returns its id."""
    from ndcg_labeler.extensions import db
    from ndcg_labeler.formats import natural_key
    from ndcg_labeler.models import Chunk, Judgment, Pair, Query, TestSet, TestSetMember, utcnow
    from ndcg_labeler.services import tallies, testsets
    from ndcg_labeler.services._db import insert_many

    test_set = testsets.create_test_set(name, 3)
    test_set.judgments_per_pair = 2
    for uid in users:
        db.session.add(TestSetMember(test_set_id=test_set.id, user_id=uid))
    db.session.commit()
    ts, per_query, now = test_set.id, 100, utcnow()
    n_queries = pairs // per_query
    insert_many(
        Query.__table__,
        ("test_set_id", "qid", "text", "sort_key"),
        [(ts, f"q{i}", f"query {i}", natural_key(f"q{i}")) for i in range(n_queries)],
    )
    insert_many(
        Chunk.__table__,
        ("test_set_id", "docid", "text", "sort_key"),
        [(ts, f"d{j}", f"chunk {j}", natural_key(f"d{j}")) for j in range(per_query * 10)],
    )
    qids = [q for (q,) in db.session.execute(db.select(Query.id).where(Query.test_set_id == ts))]
    cids = [c for (c,) in db.session.execute(db.select(Chunk.id).where(Chunk.test_set_id == ts))]
    rows = [
        (ts, q, cids[(i * 7 + j) % len(cids)], "bench", j, now)
        for i, q in enumerate(sorted(qids))
        for j in range(per_query)
    ]
    insert_many(
        Pair.__table__,
        ("test_set_id", "query_id", "chunk_id", "source", "priority", "created_at"),
        rows,
    )
    done = rows[: int(answered * len(rows))]
    insert_many(
        Judgment.__table__,
        JUDGMENT_COLUMNS,
        [
            (ts, r[1], r[2], users[k % len(users)], "graded", k % 4, "", 0, now, now)
            for k, r in enumerate(done)
        ],
    )
    tallies.recount_pool(ts)
    db.session.commit()
    db.session.get(TestSet, ts)
    return ts


def make_users(count: int = 20) -> list[int]:
    """`count` active annotators a0, a1, ...; returns their ids."""
    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import User

    users = []
    for i in range(count):
        user = User(username=f"a{i}", role="annotator", active=True)
        db.session.add(user)
        db.session.flush()
        users.append(user.id)
    db.session.commit()
    return users


def labeling(sizes: list[int], users: list[int]) -> list[dict[str, float]]:
    """p50/p95 (ms) of next_pair + progress, and of the grade save, per pool size.

    One dict per size: size, build_s, get_p50, get_p95, post_p50, post_p95.
    """
    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import TestSet, User
    from ndcg_labeler.services import labeling as service

    out = []
    for size in sizes:
        t0 = time.perf_counter()
        ts = _pool(f"scale {size}", size, users, 0.1)
        built = time.perf_counter() - t0
        get, post = [], []
        people = [db.session.get_one(User, uid) for uid in users]
        for k in range(200):
            test_set = db.session.get_one(TestSet, ts)
            user = people[k % len(people)]
            t0 = time.perf_counter()
            pair = service.next_pair(test_set, user)
            service.progress(test_set, user)
            t1 = time.perf_counter()
            assert pair is not None
            service.save_for_pair(pair, user, grade=k % 4)
            t2 = time.perf_counter()
            get.append(t1 - t0)
            post.append(t2 - t1)
            db.session.expire_all()
        out.append(
            {
                "size": size,
                "build_s": built,
                "get_p50": _pct(get, 0.5),
                "get_p95": _pct(get, 0.95),
                "post_p50": _pct(post, 0.5),
                "post_p95": _pct(post, 0.95),
            }
        )
    return out


def team_set(count: int, users: list[int]) -> int:
    """A test set with `count` graded judgments, RATERS per pair (some disagree); its id."""
    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import Judgment, Pair, utcnow
    from ndcg_labeler.services import tallies
    from ndcg_labeler.services._db import insert_many

    ts = _pool(f"team {count}", count // RATERS, users, 0.0)
    now = utcnow()
    keys = db.session.execute(
        db.select(Pair.query_id, Pair.chunk_id).where(Pair.test_set_id == ts)
    ).all()
    insert_many(
        Judgment.__table__,
        JUDGMENT_COLUMNS,
        [
            (
                ts,
                q,
                c,
                users[r],
                "graded",
                (q + c + r) % 4 if r else (q + c) % 4,
                "",
                1000,
                now,
                now,
            )
            for q, c in keys
            for r in range(RATERS)
        ],
    )
    tallies.recount_pool(ts)
    db.session.commit()
    return ts


def team_pages(judgments: list[int], users: list[int]) -> list[dict[str, object]]:
    """Agreement, people and the review queue's first page, cold and warm (ms), at each number
    of graded judgments.

    One dict per size and page: judgments, page, cold_ms, warm_ms (median of 5).
    """
    from ndcg_labeler.extensions import db
    from ndcg_labeler.models import FiguresCache, TestSet
    from ndcg_labeler.services import team

    out: list[dict[str, object]] = []
    for count in judgments:
        ts = team_set(count, users)
        test_set = db.session.get_one(TestSet, ts)
        for name, call in (
            ("agreement", lambda ts=test_set: team.cached_agreement_report(ts)),
            ("people", lambda ts=test_set: team.cached_people(ts)),
            ("review", lambda ts=test_set: team.cached_review_queue(ts)),
        ):
            db.session.execute(db.delete(FiguresCache))
            db.session.commit()
            t0 = time.perf_counter()
            call()
            cold = time.perf_counter() - t0
            warm = []
            for _ in range(5):
                t0 = time.perf_counter()
                call()
                warm.append(time.perf_counter() - t0)
            out.append(
                {
                    "judgments": count,
                    "page": name,
                    "cold_ms": 1000 * cold,
                    "warm_ms": 1000 * statistics.median(warm),
                }
            )
    return out


def main() -> None:
    """Parse the arguments, build the database, print the timings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--judgments", default="10000,60000,200000")
    parser.add_argument("--url", default=None)
    args = parser.parse_args()
    from flask_migrate import upgrade

    from ndcg_labeler.extensions import db, ensure_migrate

    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'scale.sqlite3'}"
        app = _app(url, Path(tmp))
        ensure_migrate(app)
        with app.app_context():
            upgrade()
            users = make_users()
            print(f"database: {db.engine.url.render_as_string(hide_password=True)}")
            for row in labeling([int(s) for s in args.sizes.split(",")], users):
                print(
                    f"{row['size']:>9,} pairs (built in {row['build_s']:.1f} s)  "
                    f"GET next_pair+progress p50 {row['get_p50']:6.1f} ms "
                    f"p95 {row['get_p95']:6.1f} ms | POST save p50 {row['post_p50']:6.1f} ms "
                    f"p95 {row['post_p95']:6.1f} ms"
                )
            for row in team_pages([int(s) for s in args.judgments.split(",")], users):
                print(
                    f"{row['judgments']:>9,} judgments  {row['page']:<9} "
                    f"cold {row['cold_ms']:8.0f} ms  warm median {row['warm_ms']:6.1f} ms"
                )


if __name__ == "__main__":
    main()
