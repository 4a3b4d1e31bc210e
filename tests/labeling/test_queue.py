"""The labeling queue: order, exclusions, target, leases and concurrent requests."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Assignment, Pair, TestSet, User, utcnow
from ndcg_labeler.services import accounts, labeling, testsets
from ndcg_labeler.services.labeling.queue import LEASE_MINUTES
from tests.factory import build, make_user


def _next(built, user_id):
    """(qid, docid) of the pair the queue hands to the user, or None."""
    test_set = db.session.get(TestSet, built.test_set_id)
    pair = labeling.next_pair(test_set, db.session.get(User, user_id))
    if pair is None:
        return None
    return _name(built, pair.id)


def _name(built, pair_id):
    pair = db.session.get(Pair, pair_id)
    qid = next(k for k, v in built.queries.items() if v == pair.query_id)
    docid = next(k for k, v in built.chunks.items() if v == pair.chunk_id)
    return qid, docid


def _grade(built, user_id, qid, docid, grade=1, status="graded"):
    pair = db.session.scalar(
        sa.select(Pair).where(
            Pair.query_id == built.queries[qid], Pair.chunk_id == built.chunks[docid]
        )
    )
    user = db.session.get(User, user_id)
    if status == "skipped":
        return labeling.skip_pair(pair, user)
    return labeling.save_for_pair(
        pair, user, status=status, grade=grade if status == "graded" else None
    )


def _drain(built, user_id):
    """Grade everything the queue offers, in order."""
    seen = []
    while (item := _next(built, user_id)) is not None:
        seen.append(item)
        _grade(built, user_id, *item)
    return seen


def test_one_query_at_a_time_by_priority(app: Flask, annotator_id: int):
    """q1's pairs stay together even though q2's pair has a better priority than q1/b."""
    built = build(
        app,
        pool={"q1": ["a", "b", "c"], "q2": ["d"]},
        priorities={("q1", "a"): 0, ("q1", "b"): 7, ("q1", "c"): 5, ("q2", "d"): 1},
    )
    with app.app_context():
        assert _drain(built, annotator_id) == [("q1", "a"), ("q1", "c"), ("q1", "b"), ("q2", "d")]


def test_fewest_judgments_first_and_target_respected(app: Flask, annotator_id: int):
    """Target 2: q2's pairs (no answers) come before q1's (one answer); full pairs never."""
    built = build(app, pool={"q1": ["a", "b"], "q2": ["c"], "q3": ["d"]}, target=2)
    first = make_user(app, "first")
    second = make_user(app, "second")
    with app.app_context():
        _grade(built, first, "q1", "a")
        _grade(built, first, "q1", "b")
        _grade(built, second, "q3", "d")
        _grade(built, first, "q3", "d", status="cant_tell")  # can't tell counts toward target
        assert _drain(built, annotator_id) == [("q2", "c"), ("q1", "a"), ("q1", "b")]


def test_imported_judgments_do_not_fill_the_target(app: Flask, annotator_id: int):
    built = build(app, pool={"q1": ["a"]})
    with app.app_context():
        source = accounts.import_source("qrels.txt")
        db.session.commit()
        _grade(built, source.id, "q1", "a", grade=1)
        assert _next(built, annotator_id) == ("q1", "a")


def test_never_my_answered_pairs_skipped_ones_last(app: Flask, annotator_id: int):
    built = build(app, pool={"q1": ["a", "b"], "q2": ["c"]})
    with app.app_context():
        assert _next(built, annotator_id) == ("q1", "a")
        _grade(built, annotator_id, "q1", "a", status="skipped")
        assert _next(built, annotator_id) == ("q1", "b")
        _grade(built, annotator_id, "q1", "b")
        assert _next(built, annotator_id) == ("q2", "c")
        _grade(built, annotator_id, "q2", "c")
        # Only the skipped pair is left; it comes back, then nothing.
        assert _next(built, annotator_id) == ("q1", "a")
        _grade(built, annotator_id, "q1", "a", grade=0)
        assert _next(built, annotator_id) is None


def test_reload_returns_the_same_leased_pair(app: Flask, annotator_id: int):
    built = build(app, pool={"q1": ["a", "b"]})
    with app.app_context():
        assert _next(built, annotator_id) == ("q1", "a")
        assert _next(built, annotator_id) == ("q1", "a")
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Assignment)) == 1


def test_lease_blocks_others_until_it_expires(app: Flask, annotator_id: int):
    built = build(app, pool={"q1": ["a"]}, target=1)
    other = make_user(app, "other")
    with app.app_context():
        assert _next(built, annotator_id) == ("q1", "a")
        assert _next(built, other) is None
        lease = db.session.scalars(sa.select(Assignment)).one()
        lease.assigned_at = utcnow() - timedelta(minutes=LEASE_MINUTES + 1)
        db.session.commit()
        assert _next(built, other) == ("q1", "a")


def test_answering_releases_the_lease(app: Flask, annotator_id: int):
    built = build(app, pool={"q1": ["a"]}, target=2)
    other = make_user(app, "other")
    third = make_user(app, "third")
    with app.app_context():
        assert _next(built, annotator_id) == ("q1", "a")
        assert _next(built, other) == ("q1", "a")
        assert _next(built, third) is None  # two leases = target
        _grade(built, annotator_id, "q1", "a")
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Assignment)) == 1
        assert _next(built, third) is None  # one answer + one lease = target
        _grade(built, other, "q1", "a", status="skipped")  # a skip frees the place
        assert _next(built, third) == ("q1", "a")


def _hammer(app: Flask, built, user_ids: list[int]) -> list[tuple[int, int | None]]:
    """Every user asks for a pair at the same instant; returns (user, pair id or None)."""
    barrier = threading.Barrier(len(user_ids))
    results: list[tuple[int, int | None]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def ask(user_id: int) -> None:
        try:
            with app.app_context():
                test_set = db.session.get(TestSet, built.test_set_id)
                user = db.session.get(User, user_id)
                barrier.wait()
                pair = labeling.next_pair(test_set, user)
                with lock:
                    results.append((user_id, pair.id if pair else None))
                db.session.remove()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(uid,)) for uid in user_ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return results


def test_concurrent_requests_never_exceed_the_target(app: Flask):
    """Twelve annotators ask at once for 3 pairs with target 2: exactly 6 leases, 2 per pair."""
    built = build(app, pool={"q1": ["a", "b"], "q2": ["c"]}, target=2)
    user_ids = [make_user(app, f"u{i}") for i in range(12)]
    results = _hammer(app, built, user_ids)
    per_pair = Counter(pid for _, pid in results if pid is not None)
    assert per_pair == {built.pairs[0]: 2, built.pairs[1]: 2, built.pairs[2]: 2}
    with app.app_context():
        leases = Counter(db.session.scalars(sa.select(Assignment.pair_id)))
        assert leases == per_pair


def test_concurrent_requests_count_existing_answers(app: Flask):
    """One pair already has one of its two answers: only one more person may get it."""
    built = build(app, pool={"q1": ["a"]}, target=2)
    done = make_user(app, "done")
    user_ids = [make_user(app, f"u{i}") for i in range(8)]
    with app.app_context():
        _grade(built, done, "q1", "a")
    results = _hammer(app, built, user_ids)
    assert sum(1 for _, pid in results if pid is not None) == 1


def test_removing_a_member_frees_their_lease(app: Flask, annotator_id: int):
    # One judgment wanted: while the removed annotator's lease stood, nobody else got the pair
    # for LEASE_MINUTES, though its holder could no longer even open the test set.
    other = make_user(app, "other")
    built = build(app, pool={"q1": ["a"]}, target=1, members=(annotator_id, other))
    with app.app_context():
        assert _next(built, annotator_id) == ("q1", "a")
        test_set = db.session.get_one(TestSet, built.test_set_id)
        testsets.set_members(test_set, [other])
        assert _next(built, other) == ("q1", "a")


def test_revoking_a_member_frees_their_lease(app: Flask, annotator_id: int):
    other = make_user(app, "other")
    built = build(app, pool={"q1": ["a"]}, target=1, members=(annotator_id, other))
    with app.app_context():
        assert _next(built, annotator_id) == ("q1", "a")
        test_set = db.session.get_one(TestSet, built.test_set_id)
        testsets.revoke(test_set, db.session.get_one(User, annotator_id))
        assert _next(built, other) == ("q1", "a")


def test_deactivating_a_person_frees_their_lease(app: Flask, annotator_id: int, admin_id: int):
    other = make_user(app, "other")
    built = build(app, pool={"q1": ["a"]}, target=1, members=(annotator_id, other))
    with app.app_context():
        assert _next(built, annotator_id) == ("q1", "a")
        admin = db.session.get_one(User, admin_id)
        gone = db.session.get_one(User, annotator_id)
        accounts.update_user(admin, gone, role="annotator", active=False)
        assert _next(built, other) == ("q1", "a")
