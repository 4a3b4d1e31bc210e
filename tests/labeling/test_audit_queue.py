"""The labeling queue puts the pairs of the judges' audit samples first, in draw order."""

from __future__ import annotations

from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, TestSet, User
from ndcg_labeler.services import audit_samples, labeling
from tests.factory import build, make_user
from tests.labeling.test_queue import _drain, _grade, _name, _next

POOL = {f"q{i}": [f"d{i}a", f"d{i}b"] for i in range(1, 7)}
# Priorities inside each query put its b pair first: a sampled query still starts at its best.
PRIORITIES = {(q, docs[1]): 0 for q, docs in POOL.items()} | {
    (q, docs[0]): 1 for q, docs in POOL.items()
}


def _judge(name: str) -> Judge:
    judge = Judge(name=name, base_url="http://127.0.0.1:9/v1", model="m", max_tokens=64)
    db.session.add(judge)
    db.session.commit()
    return judge


def _sample(test_set_id: int, judge_name: str, n: int, seed: int) -> list[str]:
    test_set = db.session.get_one(TestSet, test_set_id)
    return audit_samples.draw_audit(test_set, _judge(judge_name), n, seed=seed).queries


def _pairs_of(qids: list[str]) -> list[tuple[str, str]]:
    """The pairs of these queries in queue order: each query whole, its b pair first."""
    return [(q, doc) for q in qids for doc in (POOL[q][1], POOL[q][0])]


def test_sampled_queries_come_first_in_draw_order(app: Flask, annotator_id: int) -> None:
    built = build(app, pool=POOL, priorities=PRIORITIES)
    with app.app_context():
        sample = _sample(built.test_set_id, "gpt", 3, seed=4)
        assert sample != sorted(sample)  # the draw, not import order, decides
        rest = [q for q in POOL if q not in sample]
        expected = _pairs_of(sample) + _pairs_of(rest)
        test_set = db.session.get_one(TestSet, built.test_set_id)
        ahead = labeling.upcoming(
            test_set, db.session.get_one(User, annotator_id), query_id=None, exclude=set(), n=12
        )
        assert [_name(built, p.id) for p in ahead] == expected
        assert _drain(built, annotator_id) == expected


def test_a_query_already_started_is_finished_first(app: Flask, annotator_id: int) -> None:
    built = build(app, pool=POOL, priorities=PRIORITIES)
    with app.app_context():
        assert _next(built, annotator_id) == ("q1", "d1b")
        _grade(built, annotator_id, "q1", "d1b")
        sample = _sample(built.test_set_id, "gpt", 2, seed=4)
        assert "q1" not in sample
        # q1's other pair, then the sample, then the rest in import order.
        rest = [q for q in POOL if q not in sample and q != "q1"]
        assert _drain(built, annotator_id) == [
            ("q1", "d1a"),
            *_pairs_of(sample),
            *_pairs_of(rest),
        ]


def test_pairs_answered_to_target_leave_the_front(app: Flask, annotator_id: int) -> None:
    """Target 1: a sampled query someone else finished is not offered again."""
    built = build(app, pool=POOL, priorities=PRIORITIES)
    other = make_user(app, "other")
    with app.app_context():
        sample = _sample(built.test_set_id, "gpt", 2, seed=4)
        for docid in POOL[sample[0]]:
            _grade(built, other, sample[0], docid)
        first_unsampled = next(q for q in POOL if q not in sample)
        assert _drain(built, annotator_id)[:4] == [
            *_pairs_of(sample[1:]),
            *_pairs_of([first_unsampled]),
        ]


def test_two_judges_samples_interleave_by_place(app: Flask, annotator_id: int) -> None:
    built = build(app, pool=POOL, priorities=PRIORITIES)
    with app.app_context():
        one = _sample(built.test_set_id, "one", 2, seed=4)
        two = _sample(built.test_set_id, "two", 2, seed=5)
        # Each query's place is its earliest in either sample (a tie: the older sample first).
        places: list[str] = []
        for place in range(2):
            for sample in (one, two):
                if sample[place] not in places:
                    places.append(sample[place])
        assert len(places) >= 3  # the seeds give samples that overlap at most once
        order = places
        rest = [q for q in POOL if q not in places]
        assert _drain(built, annotator_id) == _pairs_of(order) + _pairs_of(rest)
