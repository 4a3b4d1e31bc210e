"""Pooling: which pairs are added, their priority, idempotence, coverage, CLI and page."""

from __future__ import annotations

import io

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Pair, Query, Run
from ndcg_labeler.services import ServiceError, pooling
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.live import ScoreOptions, score_run
from ndcg_labeler.services.pooling.plan import MAX_SOURCE, source_label
from tests.factory import Demo, grade, grant, the_test_set, trec


def _pooled() -> list[tuple[str, str, int, str]]:
    """(qid, docid, priority, source) of pairs pooling added, by qid and docid."""
    rows = db.session.execute(
        sa.select(Query.qid, Chunk.docid, Pair.priority, Pair.source)
        .join(Query, Query.id == Pair.query_id)
        .join(Chunk, Chunk.id == Pair.chunk_id)
        .where(Pair.source.like("pool:%"))
        .order_by(Query.qid, Chunk.docid)
    )
    return [tuple(r) for r in rows]


def _run(demo: Demo, which: str) -> Run:
    return db.session.get_one(Run, demo.run_a if which == "A" else demo.run_b)


def test_plan_and_add_the_unjudged_top_ranks(ctx: Flask, dash: Demo) -> None:
    test_set, a, b = the_test_set(dash), _run(dash, "A"), _run(dash, "B")
    plan = pooling.plan_pool(test_set, [a, b], 3)
    # Top 3 unjudged: A's f2 (q3, rank 1) and a (q4, rank 1: judged for q1, not for q4);
    # B's "ghost" (q2, rank 3) has no text in the corpus and is left out.
    assert (plan.to_add, plan.already_queued, plan.not_in_corpus) == (2, 0, 1)
    assert plan.source == "pool:A,B@3"
    added, _ = pooling.add_pool(test_set, [a, b], 3)
    assert added == 2
    assert _pooled() == [("q3", "f2", 1, "pool:A,B@3"), ("q4", "a", 1, "pool:A,B@3")]
    # Idempotent: the same pooling again adds nothing.
    again, plan2 = pooling.add_pool(test_set, [a, b], 3)
    assert (again, plan2.to_add, plan2.already_queued) == (0, 0, 2)
    assert len(_pooled()) == 2


def test_priority_is_the_best_rank_over_the_runs(ctx: Flask, dash: Demo) -> None:
    test_set, a = the_test_set(dash), _run(dash, "A")
    c = run_service.upload_run(
        test_set, io.BytesIO(trec({"q1": ["y", "c"], "q3": ["f1", "f2"]})), "c.trec", "C", None
    )
    added, _ = pooling.add_pool(test_set, [a, c], 4)
    assert added == 3
    # y: rank 4 in A, 1 in C → 1; f2: rank 1 in A, 2 in C → 1; a (q4): rank 1 in A.
    assert [(q, d, p) for q, d, p, _ in _pooled()] == [
        ("q1", "y", 1),
        ("q3", "f2", 1),
        ("q4", "a", 1),
    ]


def test_coverage_now_equals_score_run_and_after_is_reached(ctx: Flask, dash: Demo) -> None:
    test_set, a, b = the_test_set(dash), _run(dash, "A"), _run(dash, "B")
    plan = pooling.plan_pool(test_set, [a], 3)
    by_run = {c.run.name: c for c in plan.coverage}
    assert by_run["A"].now == pytest.approx(score_run(a, ScoreOptions(k=3)).mean_judged_at_k)
    assert by_run["B"].now == pytest.approx(score_run(b, ScoreOptions(k=3)).mean_judged_at_k)
    # A once f2 (q3) and a (q4) are graded: q1 1, q2 1, q3 2/3, q4 1/3, q5 1/3.
    assert by_run["A"].after == pytest.approx((1 + 1 + 2 / 3 + 1 / 3 + 1 / 3) / 5)
    # B is not pooled and its unjudged "ghost" cannot be: x a b | e2 e1 ghost | f1.
    assert by_run["B"].after == pytest.approx((1 + 2 / 3 + 1 / 3) / 3)
    assert (by_run["A"].chosen, by_run["B"].chosen) == (True, False)
    pooling.add_pool(test_set, [a], 3)
    grade(test_set, "q3", "f2", 0, "maria")
    grade(test_set, "q4", "a", 1, "maria")
    assert score_run(a, ScoreOptions(k=3)).mean_judged_at_k == pytest.approx(by_run["A"].after)


def test_refusals(ctx: Flask, dash: Demo) -> None:
    test_set, a = the_test_set(dash), _run(dash, "A")
    for depth in (0, -1, pooling.MAX_DEPTH + 1, None):
        with pytest.raises(ServiceError, match="depth must be"):
            pooling.plan_pool(test_set, [a], depth)
    with pytest.raises(ServiceError, match="at least one run"):
        pooling.plan_pool(test_set, [], 3)
    assert len(source_label([a] * 100, 10)) == MAX_SOURCE


def test_cli_pool(app: Flask, runner: FlaskCliRunner, dash: Demo) -> None:
    result = runner.invoke(args=["pool", "dash", "--depth", "3", "--run", "A"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Added 2 pairs to the labeling queue of 'dash'")
    again = runner.invoke(args=["pool", "dash", "--depth", "3"])
    assert again.output.startswith("Added 0 pairs")
    with app.app_context():
        assert len(_pooled()) == 2
        db.session.remove()
    for args, message in (
        (["--depth", "x"], "--depth must be a whole number"),
        (["--depth", "0"], "depth must be a whole number from 1"),
        (["--depth", "3", "--run", "nope"], "has no run named 'nope'"),
    ):
        failed = runner.invoke(args=["pool", "dash", *args])
        assert failed.exit_code == 1 and message in failed.output


def test_page_is_for_admins_and_adds_on_post(
    app: Flask, client: FlaskClient, auth, annotator_id: int, admin_id: int, dash: Demo
) -> None:
    url = dash.url("/pool/")
    assert client.get(url).status_code == 302  # anonymous: to the login page
    assert client.post(url, data={"depth": 3}).status_code == 401  # a sign-in keeping it
    auth.login("ann")
    assert client.get(url).status_code == 403  # not a member, and not an admin
    grant(app, dash.test_set_id, annotator_id)
    assert client.get(url).status_code == 403
    assert client.post(url, data={"depth": 3, "run": dash.run_a}).status_code == 403
    auth.logout()
    auth.login("admin")
    preview = client.get(url + f"?depth=3&run={dash.run_a}").get_data(as_text=True)
    assert '<strong id="pairs-to-add">2</strong>' in preview
    assert "Judged@3 now" in preview
    assert client.get(url + "?depth=abc").status_code == 400
    response = client.post(url, data={"depth": 3, "run": dash.run_a})
    assert response.status_code == 302
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "Added 2 pairs to the labeling queue (source pool:A@3)." in page
    with app.app_context():
        assert [(q, d) for q, d, _, _ in _pooled()] == [("q3", "f2"), ("q4", "a")]
    # The same preview again: nothing left to add, so no "Add 0 pairs" button, but a reason.
    again = client.get(url + f"?depth=3&run={dash.run_a}").get_data(as_text=True)
    assert '<strong id="pairs-to-add">0</strong>' in again
    assert "Add 0" not in again and "to the labeling queue</button>" not in again
    assert 'id="nothing-to-add"' in again and "queued already" in again


def test_queued_pairs_count_for_runs_not_pooled(ctx: Flask, dash: Demo) -> None:
    test_set, a = the_test_set(dash), _run(dash, "A")
    c = run_service.upload_run(
        test_set, io.BytesIO(trec({"q3": ["f2", "f1"]})), "c.trec", "C", None
    )
    pooling.add_pool(test_set, [a], 3)  # queues f2 for q3 (and a for q4)
    plan = pooling.plan_pool(test_set, [a], 3)
    coverage = {cov.run.name: cov for cov in plan.coverage}
    # C's top 3 of q3: f2 (queued by A's pooling, not yet graded) and f1 (graded).
    assert (coverage["C"].now, coverage["C"].after) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert not coverage["C"].chosen
    assert (plan.to_add, plan.already_queued) == (0, 2)
    assert c.id != a.id
