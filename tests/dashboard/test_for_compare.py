"""Pooling for a decision: the order of two runs' unjudged pairs, the queue, the CLI."""

from __future__ import annotations

import json
import math

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    Chunk,
    Judge,
    MachineJudgment,
    Pair,
    PromptVersion,
    Query,
    Run,
    TestSet,
    User,
)
from ndcg_labeler.services import ServiceError, labeling, live, pooling
from ndcg_labeler.services.accounts import create_token
from tests.factory import A3, B3, Demo, grade, make_user, the_test_set

L3 = math.log2(3)
# Unjudged pairs of A's or B's top 4 (see tests/factory.py), top grade 3:
#   q3 f2: A rank 1, not in B: 3 × |1/log2(2) − 0| = 3
#   q4 a:  A rank 1 (a is judged for q1 only), B has no q4: 3
#   q2 ghost: B rank 3 only: 3 × |0 − 1/log2(4)| = 3 × 0.5 = 1.5
#   q1 y:  A rank 4 only: 3 × 1/log2(5) = 3 / 2.321928094887362 = 1.2920296742201791
# "ghost" is in no corpus (tests/factory.py): listed, but marked as having no text to label by.
EXPECTED = [
    {"qid": "q3", "docid": "f2", "weight": 3.0, "rank_a": 1, "rank_b": None, "in_corpus": True},
    {"qid": "q4", "docid": "a", "weight": 3.0, "rank_a": 1, "rank_b": None, "in_corpus": True},
    {"qid": "q2", "docid": "ghost", "weight": 1.5, "rank_a": None, "rank_b": 3,
     "in_corpus": False},
    {"qid": "q1", "docid": "y", "weight": pytest.approx(1.2920296742201791), "rank_a": 4,
     "rank_b": None, "in_corpus": True},
]  # fmt: skip


def _runs(demo: Demo) -> tuple[TestSet, Run, Run]:
    return (
        the_test_set(demo),
        db.session.get_one(Run, demo.run_a),
        db.session.get_one(Run, demo.run_b),
    )


def test_order_weights_and_depth_cut(ctx: Flask, dash: Demo) -> None:
    test_set, a, b = _runs(dash)
    assert pooling.plan_for_compare(test_set, a, b, 4).to_json() == EXPECTED
    # Depth 2: ghost (B rank 3) and y (A rank 4) are beyond the cut.
    assert pooling.plan_for_compare(test_set, a, b, 2).to_json() == EXPECTED[:2]


def test_flip_test_on_the_dashboard_runs(ctx: Flask, dash: Demo) -> None:
    test_set, a, b = _runs(dash)
    plan = pooling.plan_for_compare(test_set, a, b, 4, live.ScoreOptions(k=3))
    found = plan.robustness
    assert found is not None
    # Today (q4 undefined, left out): mean of B − A over q1, q2, q3, q5 (factory's hand values).
    today = sum(B3[q] - A3[q] for q in ("q1", "q2", "q3", "q5")) / 4
    assert found.mean_delta == pytest.approx(today)
    assert today < 0  # A wins
    # Top grade for the unjudged chunks of either top 3: ghost (B rank 3, q2), f2 (A rank 1, q3).
    # q2: A = e1 e2 e3 = 2 + 1/log2(3); B = e2 e1 ghost = 1 + 2/log2(3) + 3/2; ideal 3 2 1.
    q2 = (1 + 2 / L3 + 3 / 2 - 2 - 1 / L3) / (3 + 2 / L3 + 1 / 2)
    # q3: A = f2 f1 = 3 + 1/log2(3); B = f1 = 1; ideal 3 1 = 3 + 1/log2(3).
    q3 = (1 - 3 - 1 / L3) / (3 + 1 / L3)
    if_top = (B3["q1"] - A3["q1"] + q2 + q3 + B3["q5"] - A3["q5"]) / 4
    assert found.mean_delta_if_top == pytest.approx(if_top)
    assert if_top < 0  # A still wins: robust, nothing remains
    assert (found.robust, found.labels_remaining) == (True, 0)
    summary = plan.summary_json()
    assert (summary["robust"], summary["labels_remaining"], summary["k"]) == (True, 0, 3)


def test_machine_grades_do_not_count_but_peoples_do(ctx: Flask, dash: Demo) -> None:
    test_set, a, b = _runs(dash)
    judge = Judge(name="gpt", base_url="http://127.0.0.1:9", model="m", max_tokens=10)
    db.session.add_all([judge, PromptVersion(sha256="0" * 64, template="")])
    db.session.flush()
    q3 = db.session.scalar(sa.select(Query.id).where(Query.qid == "q3"))
    f2 = db.session.scalar(sa.select(Chunk.id).where(Chunk.docid == "f2"))
    db.session.add(
        MachineJudgment(
            test_set_id=test_set.id, query_id=q3, chunk_id=f2, judge_id=judge.id,
            prompt_sha256="0" * 64, model="m", status="labeled", grade=3,
        )
    )  # fmt: skip
    db.session.commit()
    assert live.grades_by_query(test_set, labels="machine:gpt")[q3] == {"f2": 3}
    assert pooling.plan_for_compare(test_set, a, b, 4).to_json() == EXPECTED
    grade(test_set, "q3", "f2", 0, "maria")  # a person's grade: judged
    assert pooling.plan_for_compare(test_set, a, b, 4).to_json() == EXPECTED[1:]


def test_refusals(ctx: Flask, dash: Demo) -> None:
    test_set, a, b = _runs(dash)
    with pytest.raises(ServiceError, match="depth"):
        pooling.plan_for_compare(test_set, a, b, 0)
    with pytest.raises(ServiceError, match="different"):
        pooling.plan_for_compare(test_set, a, a, 3)
    plan = pooling.plan_for_compare(test_set, a, b, 3, live.ScoreOptions(ideal="retrieved"))
    assert plan.robustness is None and "judged ideal" in plan.note


def _queue(test_set: TestSet) -> list[tuple[str, str, int, str]]:
    rows = db.session.execute(
        sa.select(Query.qid, Chunk.docid, Pair.priority, Pair.source)
        .join(Query, Query.id == Pair.query_id)
        .join(Chunk, Chunk.id == Pair.chunk_id)
        .where(Pair.test_set_id == test_set.id, Pair.priority < 0)
        .order_by(Pair.priority)
    )
    return [tuple(r) for r in rows]


def test_adding_keeps_the_weight_order_in_the_queue(app: Flask, ctx: Flask, dash: Demo) -> None:
    test_set, a, b = _runs(dash)
    # y is queued already by a rank pool (priority 4): it moves into the weight order.
    added, _ = pooling.add_pool(test_set, [a], 4)
    assert added == 3  # f2, a (q4), y
    done = pooling.add_for_compare(test_set, a, b, 4)
    # ghost has no text: it cannot be graded, so it is not queued.
    assert (done.added, done.requeued, done.not_in_corpus) == (0, 3, 1)
    assert [(q, d, p) for q, d, p, _ in _queue(test_set)] == [
        ("q3", "f2", -3),
        ("q4", "a", -2),
        ("q1", "y", -1),
    ]
    # The queue hands out the query of the lowest priority first (then finishes that query).
    user = db.session.get_one(User, make_user(app, "ann"))
    handed = []
    while (pair := labeling.next_pair(test_set, user)) is not None:
        name = db.session.execute(
            sa.select(Query.qid, Chunk.docid)
            .select_from(Pair)
            .join(Chunk, Chunk.id == Pair.chunk_id)
            .join(Query, Query.id == Pair.query_id)
            .where(Pair.id == pair.id)
        ).one()
        handed.append(tuple(name))
        labeling.save_for_pair(pair, user, status="graded", grade=0)
    mine = [item for item in handed if item in {("q3", "f2"), ("q4", "a"), ("q1", "y")}]
    assert mine == [("q3", "f2"), ("q4", "a"), ("q1", "y")]
    assert handed[0] == ("q3", "f2")


def test_adding_new_pairs_sets_source_and_order(ctx: Flask, dash: Demo) -> None:
    test_set, a, b = _runs(dash)
    done = pooling.add_for_compare(test_set, a, b, 4)
    assert (done.added, done.requeued, done.not_in_corpus) == (3, 0, 1)
    assert _queue(test_set) == [
        ("q3", "f2", -3, "compare:A,B@4"),
        ("q4", "a", -2, "compare:A,B@4"),
        ("q1", "y", -1, "compare:A,B@4"),
    ]
    again = pooling.add_for_compare(test_set, a, b, 4)  # idempotent
    assert (again.added, again.requeued) == (0, 3)
    assert len(_queue(test_set)) == 3


def test_cli_json_table_and_add(app: Flask, runner: FlaskCliRunner, dash: Demo) -> None:
    args = ["pool", "dash", "--for-compare", "A", "B", "--depth", "4"]
    result = runner.invoke(args=[*args, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == EXPECTED
    table = runner.invoke(args=[*args, "--k", "3"])
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert lines[0].startswith("Unjudged pairs in the top 4 of A (A) or B (B): 4")
    assert [line.split()[:3] for line in lines[3:7]] == [
        ["q3", "f2", "3.0000"],
        ["q4", "a", "3.0000"],
        ["q2", "ghost", "1.5000"],
        ["q1", "y", "1.2920"],
    ]
    assert lines[7] == (
        "In no corpus, so no text to label by (import it first; --add leaves them out): ghost."
    )
    assert "Robust: the winner is the same either way (0 labels remaining)." in table.output
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).where(Pair.priority < 0)) == 0
    added = runner.invoke(args=[*args, "--json", "--add"])
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout) == EXPECTED
    assert "Queued 3 new pairs" in added.stderr
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).where(Pair.priority < 0)) == 3
    for bad, message in (
        (["--run", "A"], "alone"),
        (["--for-compare", "A", "nope"], "nope"),
    ):
        failed = runner.invoke(
            args=[
                "pool",
                "dash",
                "--depth",
                "4",
                *bad,
                *(["--for-compare", "A", "B"] if bad[0] == "--run" else []),
            ]
        )
        assert failed.exit_code == 1 and message in failed.output
    plain = runner.invoke(args=["pool", "dash", "--depth", "4", "--json"])
    assert plain.exit_code == 1 and "--for-compare" in plain.output


def test_cli_depth_alone_below_ten_tests_the_flip_at_k_depth(
    runner: FlaskCliRunner, dash: Demo
) -> None:
    """`--depth 3` alone ran the flip test at NDCG@10 over a list of the top 3, so it weighed
    chunks it never listed; k now defaults to the depth when that is below 10, and says so."""
    args = ["pool", "dash", "--for-compare", "A", "B", "--depth", "3"]
    table = runner.invoke(args=args)
    assert table.exit_code == 0, table.output
    # The factory's hand NDCG@3 values over the queries defined in both (q4 is undefined).
    delta = sum(B3[q] - A3[q] for q in ("q1", "q2", "q3", "q5")) / 4
    assert f"Mean NDCG@3 of B − A: {delta:+.4f} today" in table.stdout
    note = "The flip test is at k = 3, the --depth, as no --k was given (--k 10 for NDCG@10)."
    assert note in table.stdout
    as_json = runner.invoke(args=[*args, "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == EXPECTED[:3]  # the top 3 holds the first three
    assert note in as_json.stderr  # stdout stays one JSON document
    # --k given, or a depth of 10 or more: k as asked (the default 10), no note.
    for more in (["--k", "10"], ["--depth", "12"]):
        asked = runner.invoke(args=[*args, *more])
        assert asked.exit_code == 0, asked.output
        assert "Mean NDCG@10 of B − A" in asked.stdout and "--depth, as no --k" not in asked.output


def test_api_lists_the_same_pairs_with_the_flip_test(
    app: Flask, client: FlaskClient, admin_id: int, dash: Demo
) -> None:
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
    headers = {"Authorization": f"Bearer {token}"}
    url = f"/api/testsets/{dash.test_set_id}/next-labels"
    found = client.get(f"{url}?a=A&b=B&depth=4&k=3", headers=headers)
    assert found.status_code == 200, found.json
    body = found.json
    assert body["pairs"] == EXPECTED
    assert (body["robust"], body["labels_remaining"], body["depth"], body["k"]) == (True, 0, 4, 3)
    assert (body["run_a"], body["run_b"], body["unjudged_pairs"]) == ("A", "B", 4)
    assert body["not_in_corpus"] == 1  # q2 ghost
    assert body["mean_delta"] == pytest.approx(
        sum(B3[q] - A3[q] for q in ("q1", "q2", "q3", "q5")) / 4
    )
    assert client.get(f"{url}?a=A&b=B", headers=headers).json["depth"] == 10  # the default
    for query, status in (("a=A", 400), ("a=A&b=nope", 404), ("a=A&b=B&depth=x", 400),
                          ("a=A&b=B&depth=0", 400), ("a=A&b=A", 400)):  # fmt: skip
        assert client.get(f"{url}?{query}", headers=headers).status_code == status, query
    assert client.get(f"{url}?a=A&b=B").status_code == 401


def test_api_asks_the_corpus_once_per_request(
    app: Flask, client: FlaskClient, admin_id: int, dash: Demo
) -> None:
    """The summary's not_in_corpus and the pairs' in_corpus come from one corpus lookup."""
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
    headers = {"Authorization": f"Bearer {token}"}
    url = f"/api/testsets/{dash.test_set_id}/next-labels?a=A&b=B&depth=4&k=3"
    first = client.get(url, headers=headers).json  # orders the plan (kept for the next one)
    statements: list[str] = []

    def record(conn, cursor, statement, *args) -> None:  # type: ignore[no-untyped-def]
        statements.append(" ".join(statement.lower().split()))

    with app.app_context():
        sa.event.listen(db.engine, "before_cursor_execute", record)
        try:
            again = client.get(url, headers=headers).json
        finally:
            sa.event.remove(db.engine, "before_cursor_execute", record)
    lookups = [s for s in statements if "from chunk" in s and "chunk.text is not null" in s]
    assert len(lookups) == 1, lookups
    assert again == first
    assert (again["pairs"], again["not_in_corpus"]) == (EXPECTED, 1)
