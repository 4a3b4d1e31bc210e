"""Stored counters against a recount from the judgment table: random actions, concurrent grades."""

from __future__ import annotations

import io
import random
import threading
from collections import Counter, defaultdict

import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, Pair, Query, TestSet, User
from ndcg_labeler.services import imports, labeling, tallies
from tests.factory import build, make_user

COUNTED = ("graded", "cant_tell")


def _recount(test_set_id: int) -> dict[str, object]:
    """Every counter recomputed in Python from the judgment, pair and user rows."""
    roles = dict(db.session.execute(sa.select(User.id, User.role)).all())
    judgments = db.session.execute(
        sa.select(
            Judgment.query_id, Judgment.chunk_id, Judgment.annotator_id, Judgment.status
        ).where(Judgment.test_set_id == test_set_id)
    ).all()
    pool = set(
        db.session.execute(
            sa.select(Pair.query_id, Pair.chunk_id).where(Pair.test_set_id == test_set_id)
        ).all()
    )
    answers: Counter[tuple[int, int]] = Counter()
    grades: Counter[tuple[int, int]] = Counter()
    for q, c, who, status in judgments:
        if status in COUNTED and roles[who] != "import":
            answers[(q, c)] += 1
        if status == "graded":
            grades[(q, c)] += 1
    levels = [0] * 6
    for key in pool:
        levels[min(answers[key], 5)] += 1
    mine: dict[int, list[int]] = defaultdict(lambda: [0] * 6)
    for q, c, who, status in judgments:
        if (q, c) not in pool or roles[who] == "import":
            continue
        if status in COUNTED:
            mine[who][min(answers[(q, c)], 5) - 1] += 1
        elif status == "skipped":
            mine[who][5] += 1
    return {
        "pairs": {key: (answers[key], grades[key]) for key in pool},
        "levels": tuple(levels),
        "graded_pairs": sum(1 for key in pool if grades[key]),
        "graded_judgments": sum(1 for *_, status in judgments if status == "graded"),
        "mine": {who: tuple(v) for who, v in mine.items() if any(v)},
    }


def _stored(test_set_id: int, user_ids: list[int]) -> dict[str, object]:
    """The same figures as the services store them."""
    pool = tallies.pool_counts(test_set_id)
    rows = db.session.execute(
        sa.select(Pair.query_id, Pair.chunk_id, Pair.answers, Pair.grades)
        .where(Pair.test_set_id == test_set_id)
        .execution_options(populate_existing=True)
    ).all()
    mine = {}
    for uid in user_ids:
        counts = tallies.annotator_counts(test_set_id, uid)
        figures = (*counts.mine, counts.skipped)
        if any(figures):
            mine[uid] = figures
    return {
        "pairs": {(q, c): (a, g) for q, c, a, g in rows},
        "levels": pool.levels,
        "graded_pairs": pool.graded_pairs,
        "graded_judgments": pool.graded_judgments,
        "mine": mine,
    }


def _import(test_set: TestSet, name: str, text: str, kind: str) -> None:
    imports.import_files(test_set, **{kind: imports.ImportFile(io.BytesIO(text.encode()), name)})


def test_counters_match_a_recount_after_random_actions(app: Flask) -> None:
    """200 random saves, re-grades, can't-tells, skips, leases, qrels imports and pool growth
    (seed 20261124); after each step the stored counters equal a recount from the judgments."""
    pool = {f"q{i}": [f"d{i}{j}" for j in range(4)] for i in range(3)}
    built = build(app, pool=pool, target=2)
    people = [make_user(app, f"p{i}") for i in range(5)]
    rng = random.Random(20261124)
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        # Chunks outside the pool (judged first, pooled later).
        extra = [Chunk(test_set_id=test_set.id, docid=f"x{i}", text="t") for i in range(3)]
        db.session.add_all(extra)
        db.session.commit()
        queries = list(db.session.scalars(sa.select(Query).where(Query.test_set_id == test_set.id)))
        chunks = list(db.session.scalars(sa.select(Chunk).where(Chunk.test_set_id == test_set.id)))
        users = [db.session.get_one(User, uid) for uid in people]
        for step in range(200):
            action = rng.choice(["grade", "grade", "cant_tell", "skip", "next", "qrels", "pool"])
            user, query, chunk = rng.choice(users), rng.choice(queries), rng.choice(chunks)
            if action in ("grade", "cant_tell"):
                grade = rng.randrange(4) if action == "grade" else None
                status = "graded" if action == "grade" else "cant_tell"
                labeling.save_judgment(test_set, query, chunk, user, status=status, grade=grade)
            elif action == "skip":
                pair = db.session.scalar(
                    sa.select(Pair).where(Pair.query_id == query.id, Pair.chunk_id == chunk.id)
                )
                if pair is not None:
                    labeling.skip_pair(pair, user)
            elif action == "next":
                labeling.next_pair(test_set, user)
            elif action == "qrels":
                lines = "".join(
                    f"{query.qid} 0 {docid} {rng.randrange(4)}\n"
                    for docid in {rng.choice(chunks).docid for _ in range(3)}
                )
                _import(test_set, "r.qrels", lines, "qrels")
            elif rng.random() < 0.3:
                _import(test_set, "p.csv", f"qid,docid\n{query.qid},{chunk.docid}\n", "pool")
            db.session.expire_all()
            assert _stored(test_set.id, people) == _recount(test_set.id), f"step {step}"
        stored = _recount(test_set.id)
        assert stored["graded_judgments"] > 20  # the walk did grade (not a vacuous pass)


def test_two_threads_grading_one_pair_count_twice(app: Flask) -> None:
    """Two people grade the same pair at the same moment, many times over fresh pairs: each
    pair ends with two answers and the test set's counts match a recount."""
    docids = [f"d{i}" for i in range(8)]
    built = build(app, pool={"q": docids}, target=2)
    people = [make_user(app, "a"), make_user(app, "b")]
    errors: list[BaseException] = []

    def grade(user_id: int, barrier: threading.Barrier, pair_id: int, value: int) -> None:
        try:
            with app.app_context():
                pair = db.session.get_one(Pair, pair_id)
                user = db.session.get_one(User, user_id)
                barrier.wait()
                labeling.save_for_pair(pair, user, grade=value)
                db.session.remove()
        except BaseException as exc:
            errors.append(exc)

    for number, pair_id in enumerate(built.pairs):
        barrier = threading.Barrier(2)
        threads = [
            threading.Thread(target=grade, args=(uid, barrier, pair_id, (number + k) % 4))
            for k, uid in enumerate(people)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    with app.app_context():
        answers = list(db.session.scalars(sa.select(Pair.answers).order_by(Pair.id)))
        assert answers == [2] * len(docids)
        pool = tallies.pool_counts(built.test_set_id)
        assert pool.levels == (0, 0, 8, 0, 0, 0)
        assert (pool.graded_pairs, pool.graded_judgments) == (8, 16)
        for uid in people:
            counts = tallies.annotator_counts(built.test_set_id, uid)
            assert counts.mine == (0, 8, 0, 0, 0)  # 8 pairs answered, each now with 2 answers
        test_set = db.session.get_one(TestSet, built.test_set_id)
        mine = labeling.progress(test_set, db.session.get_one(User, people[0]))
        assert (mine.done, mine.pairs, mine.mine_done, mine.mine_total) == (8, 8, 8, 8)
        assert _stored(built.test_set_id, people) == _recount(built.test_set_id)
