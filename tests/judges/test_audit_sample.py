"""A judge's audit sample: the seeded draw, extending it, reseeding, and what "audited" means."""

from __future__ import annotations

import io
import threading

import numpy as np
import pytest
import sqlalchemy as sa
from flask import Flask
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    AuditEvent,
    AuditSampleQuery,
    Judge,
    MachineJudgment,
    PromptVersion,
    Query,
    TestSet,
)
from ndcg_labeler.services import ServiceError, audit_samples
from ndcg_labeler.services.imports import ImportFile, import_files
from tests.factory import build, judge, make_user

# Ten queries whose byte order differs from their natural order (q10 before q2) and from a
# case-blind order ("Zeta" before "alpha"); "été" sorts last (é is U+00E9, after every ASCII).
QIDS = ["q1", "q2", "q10", "q3", "alpha", "Zeta", "été", "q20", "b", "q4"]
BYTE_ORDER = ["Zeta", "alpha", "b", "q1", "q10", "q2", "q20", "q3", "q4", "été"]


def _set(app: Flask, name: str = "ts", pool: dict[str, list[str]] | None = None) -> int:
    pool = pool if pool is not None else {qid: [f"{qid}-d"] for qid in QIDS}
    return build(app, name, pool=pool).test_set_id


def _judge(name: str = "gpt") -> Judge:
    found = db.session.scalar(sa.select(Judge).where(Judge.name == name))
    if found is None:
        found = Judge(name=name, base_url="http://127.0.0.1:9/v1", model="m", max_tokens=64)
        db.session.add(found)
        db.session.commit()
    return found


def _draw(test_set_id: int, n: int, **kw: object) -> audit_samples.AuditState:
    return audit_samples.draw_audit(db.session.get_one(TestSet, test_set_id), _judge(), n, **kw)


def _state(test_set_id: int, judge_name: str = "gpt") -> audit_samples.AuditState:
    return audit_samples.audit_state(db.session.get_one(TestSet, test_set_id), _judge(judge_name))


def test_the_draw_order_is_numpy_s_seeded_permutation_of_the_byte_ordered_qids() -> None:
    """The documented recipe, run here with NumPy directly: default_rng(S).permutation."""
    assert sorted(QIDS, key=lambda q: q.encode()) == BYTE_ORDER
    for seed in (0, 1, 42, 2**40 + 7):
        expected = list(np.random.default_rng(seed).permutation(np.array(BYTE_ORDER)))
        assert audit_samples.draw_order(QIDS, seed) == expected
        # The input's order does not matter: only the set of qids and the seed.
        assert audit_samples.draw_order(list(reversed(QIDS)), seed) == expected
    assert audit_samples.draw_order(QIDS, 1) != audit_samples.draw_order(QIDS, 2)


def test_the_first_n_of_the_draw_are_a_uniform_sample() -> None:
    """Over 3,000 seeds each of the 10 qids is among the first 3 about 900 times (χ², 9 df)."""
    seen = dict.fromkeys(QIDS, 0)
    for seed in range(3000):
        for qid in audit_samples.draw_order(QIDS, seed)[:3]:
            seen[qid] += 1
    assert sum(seen.values()) == 9000
    assert stats.chisquare(list(seen.values())).pvalue > 0.001


def test_same_seed_same_sample_and_a_bigger_n_extends_it(app: Flask) -> None:
    first, second = _set(app, "one"), _set(app, "two")
    with app.app_context():
        expected = audit_samples.draw_order(QIDS, 7)
        small = _draw(first, 3, seed=7)
        assert (small.seed, small.queries) == (7, expected[:3])
        extended = _draw(first, 6)  # no seed: the stored one
        assert (extended.seed, extended.queries) == (7, expected[:6])
        assert _draw(second, 6, seed=7).queries == expected[:6]  # at once: the same six
        again = _draw(first, 6, seed=7)  # the same N and seed: nothing changes
        assert again.queries == expected[:6]
        # Extending appended rows 3..5 after the first three; nothing was rewritten.
        rows = db.session.execute(
            sa.select(AuditSampleQuery.position, Query.qid)
            .join(Query, Query.id == AuditSampleQuery.query_id)
            .where(Query.test_set_id == first)
            .order_by(AuditSampleQuery.position)
        ).all()
        assert [tuple(r) for r in rows] == list(enumerate(expected[:6]))


def test_the_default_seed_is_random_stored_and_kept(app: Flask) -> None:
    test_set_id = _set(app)
    with app.app_context():
        drawn = _draw(test_set_id, 2)
        assert drawn.seed is not None and 0 <= drawn.seed < 2**32
        assert drawn.queries == audit_samples.draw_order(QIDS, drawn.seed)[:2]
        later = _draw(test_set_id, 5)
        assert later.seed == drawn.seed
        assert later.queries == audit_samples.draw_order(QIDS, drawn.seed)[:5]
        assert _state(test_set_id) == later


def test_another_seed_is_refused_unless_reseeded(app: Flask) -> None:
    test_set_id = _set(app)
    with app.app_context():
        _draw(test_set_id, 4, seed=1)
        with pytest.raises(ServiceError, match=r"drawn with seed 1.*--reseed"):
            _draw(test_set_id, 4, seed=2)
        assert _state(test_set_id).seed == 1
        redrawn = _draw(test_set_id, 3, seed=2, reseed=True)  # smaller N: a new sample
        assert (redrawn.seed, redrawn.queries) == (2, audit_samples.draw_order(QIDS, 2)[:3])
        fresh = _draw(test_set_id, 3, reseed=True)  # no seed: a new random one
        assert fresh.queries == audit_samples.draw_order(QIDS, fresh.seed)[:3]


@pytest.mark.parametrize(
    ("n", "message"),
    [
        (11, "N must be a whole number from 1 to 10"),
        (0, "N must be a whole number from 1 to 10"),
        (2, "only grows"),
    ],
)
def test_n_out_of_range_is_refused(app: Flask, n: int, message: str) -> None:
    test_set_id = _set(app)
    with app.app_context():
        _draw(test_set_id, 3, seed=5)
        with pytest.raises(ServiceError, match=message):
            _draw(test_set_id, n)
        assert _state(test_set_id).queries == audit_samples.draw_order(QIDS, 5)[:3]


def test_a_bad_seed_and_an_empty_set_are_refused(app: Flask) -> None:
    empty = _set(app, "empty", pool={})
    with app.app_context():
        with pytest.raises(ServiceError, match="no queries"):
            _draw(empty, 1)
        with pytest.raises(ServiceError, match="seed must be"):
            _draw(_set(app), 1, seed=-1)


def test_each_judge_has_its_own_sample(app: Flask) -> None:
    test_set_id = _set(app)
    with app.app_context():
        _draw(test_set_id, 2, seed=3)
        _judge("other")
        assert _state(test_set_id, "other") == audit_samples.AuditState(None, [], [], [], 10)
        assert _state(test_set_id).queries == audit_samples.draw_order(QIDS, 3)[:2]


def test_a_draw_and_an_extension_leave_audit_events(app: Flask) -> None:
    test_set_id = _set(app)
    with app.app_context():
        _draw(test_set_id, 2, seed=9)
        _draw(test_set_id, 4)
        _draw(test_set_id, 4)  # nothing new: no event
        _draw(test_set_id, 1, seed=8, reseed=True)
        events = db.session.scalars(sa.select(AuditEvent).order_by(AuditEvent.id)).all()
    order9 = audit_samples.draw_order(QIDS, 9)
    assert [e.action for e in events] == ["audit_sample.draw"] * 3
    assert [e.actor_name for e in events] == ["cli"] * 3
    first, second, third = (e.details for e in events)
    assert (first["seed"], first["queries"], first["added_qids"]) == (9, 2, order9[:2])
    assert (second["previous_queries"], second["queries"], second["added_qids"]) == (
        2,
        4,
        order9[2:4],
    )
    assert third["reseeded"] is True and third["previous_seed"] == 9 and third["seed"] == 8


# -- audited -------------------------------------------------------------------------------------

AUDIT_POOL = {
    "person": ["p1", "p2"],  # both graded by a person: audited
    "imported": ["i1"],  # an imported qrel: audited
    "mixed": ["m1", "m2"],  # one by a person, one by an imported qrel: audited
    "machine": ["x1"],  # a machine grade only: not audited
    "partial": ["a1", "a2"],  # one of two graded: not audited
    "cant": ["c1"],  # a person's "can't tell" is no grade: not audited
}


def _machine_grade(test_set_id: int, qid: str, docid: str) -> None:
    judge_row = _judge()
    if db.session.get(PromptVersion, "0" * 64) is None:
        db.session.add(PromptVersion(sha256="0" * 64, template=""))
    query_id = db.session.scalar(
        sa.select(Query.id).where(Query.test_set_id == test_set_id, Query.qid == qid)
    )
    chunk_id = db.session.scalar(
        sa.text("SELECT id FROM chunk WHERE test_set_id = :t AND docid = :d"),
        {"t": test_set_id, "d": docid},
    )
    db.session.add(
        MachineJudgment(
            test_set_id=test_set_id,
            query_id=query_id,
            chunk_id=chunk_id,
            judge_id=judge_row.id,
            prompt_sha256="0" * 64,
            model="m",
            status="labeled",
            grade=2,
        )
    )
    db.session.commit()


def test_audited_means_every_pool_pair_has_a_human_grade(app: Flask) -> None:
    built = build(app, pool=AUDIT_POOL)
    with app.app_context():
        # A query without pool pairs: in the sample, never audited.
        db.session.add(Query(test_set_id=built.test_set_id, qid="empty", text="no pairs"))
        db.session.commit()
    make_user(app, "ann")
    for qid, docid in [("person", "p1"), ("person", "p2"), ("mixed", "m1"), ("partial", "a1")]:
        judge(app, built.test_set_id, qid, docid, "ann", grade=1)
    judge(app, built.test_set_id, "cant", "c1", "ann", status="cant_tell")
    with app.app_context():
        test_set = db.session.get_one(TestSet, built.test_set_id)
        qrels = b"imported 0 i1 0\nmixed 0 m2 3\n"
        import_files(test_set, qrels=ImportFile(io.BytesIO(qrels), "human.qrels"))
        _machine_grade(built.test_set_id, "machine", "x1")
        state = _draw(built.test_set_id, 7, seed=11)
    order = audit_samples.draw_order([*AUDIT_POOL, "empty"], 11)
    assert state.queries == order
    assert state.audited == [q for q in order if q in {"person", "imported", "mixed"}]
    assert state.no_pairs == ["empty"]
    assert state.to_json()["audited"] == state.audited
    assert set(state.to_json()) >= {"queries", "seed", "audited"}


def test_two_admins_drawing_the_first_sample_at_once_both_get_it(app: Flask) -> None:
    """Two first draws of the same sample at the same moment (same N, same seed) are the same
    request twice: both succeed and one sample of N queries is stored, the seed's first N."""
    errors: list[BaseException] = []

    def draw(test_set_id: int, judge_id: int, barrier: threading.Barrier) -> None:
        try:
            with app.app_context():
                test_set = db.session.get_one(TestSet, test_set_id)
                found = db.session.get_one(Judge, judge_id)
                barrier.wait()
                audit_samples.draw_audit(test_set, found, 4, seed=11)
                db.session.remove()
        except BaseException as exc:
            errors.append(exc)

    for attempt in range(4):
        test_set_id = _set(app, f"race{attempt}")
        with app.app_context():
            judge_id = _judge().id
        barrier = threading.Barrier(2)
        threads = [
            threading.Thread(target=draw, args=(test_set_id, judge_id, barrier)) for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [], attempt
        with app.app_context():
            state = _state(test_set_id)
            assert (state.seed, state.queries) == (11, audit_samples.draw_order(QIDS, 11)[:4])
