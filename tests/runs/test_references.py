"""References by id or name: a name of digits alone and another object's id never meet silently.

A run (or test set, or judge) may be named "17" while another one has id 17. A plain "17"
that could mean either is refused with both named and the way to choose; `id:17` and `name:17`
choose (docs: reference/http-api.md, "References").
"""

from __future__ import annotations

import io
import json

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.client.wire import named, ref
from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import judges, runs, testsets
from ndcg_labeler.services.accounts import create_token
from tests.factory import build_test_set, grant, make_user, trec

QUERIES = {"q1": "leave", "q2": "expenses"}
QRELS = [("q1", "a", 3), ("q1", "b", 1), ("q2", "x", 2)]
RANKED = {"q1": ["a", "b"], "q2": ["x"]}


def _token(app: Flask, user_id: int) -> dict[str, str]:
    with app.app_context():
        return {"Authorization": f"Bearer {create_token(db.session.get_one(User, user_id))}"}


def _clash(app: Flask) -> tuple[int, int, int, int]:
    """Test set "refs" (id S) beside a test set named "S"; in "refs", run "bm25" (id X) beside
    a run named "X" (id Y). (S, X, Y, id of the test set named "S")."""
    with app.app_context():
        main = build_test_set("refs", QUERIES, QRELS)
        first = runs.upload_run(main, io.BytesIO(trec(RANKED)), "a.trec", "bm25", None)
        second = runs.upload_run(main, io.BytesIO(trec(RANKED)), "b.trec", str(first.id), None)
        other = testsets.create_test_set(str(main.id))
        return main.id, first.id, second.id, other.id


def test_the_api_refuses_a_reference_that_is_one_objects_id_and_anothers_name(
    app: Flask, client: FlaskClient, admin_id: int
) -> None:
    s, x, y, other = _clash(app)
    admin = _token(app, admin_id)
    both = client.get(f"/api/testsets/{s}/runs", headers=admin)
    assert both.status_code == 400
    assert both.get_json()["detail"] == (
        f"'{s}' names two test sets: test set {s} ('refs') by its id and test set {other} "
        f"by its name; write id:{s} or name:{s}"
    )
    by_id = client.get(f"/api/testsets/id:{s}/runs", headers=admin).get_json()
    assert sorted(r["name"] for r in by_id["runs"]) == sorted(["bm25", str(x)])
    by_name = client.get(f"/api/testsets/name:{s}/runs", headers=admin).get_json()
    assert by_name["runs"] == [] and by_name["total"] == 0
    run_both = client.get(f"/api/testsets/id:{s}/runs/{x}/scores", headers=admin)
    assert run_both.status_code == 400
    assert run_both.get_json()["detail"] == (
        f"'{x}' names two runs: run {x} ('bm25') by its id and run {y} by its name; "
        f"write id:{x} or name:{x}"
    )
    assert client.get(f"/api/testsets/id:{s}/runs/id:{x}/scores", headers=admin).status_code == 200
    assert (
        client.get(f"/api/testsets/id:{s}/runs/name:{x}/scores", headers=admin).status_code == 200
    )
    # No clash: a plain id, a plain name and a name of digits that is no run's id still work.
    assert client.get(f"/api/testsets/refs/runs/{y}/scores", headers=admin).status_code == 200
    assert client.get("/api/testsets/refs/runs/bm25/scores", headers=admin).status_code == 200
    missing = client.get(f"/api/testsets/refs/runs/id:{y + 100}/scores", headers=admin)
    assert missing.status_code == 404
    compare = client.get(f"/api/testsets/refs/compare?a={x}&b=bm25", headers=admin)
    assert compare.status_code == 400 and "names two runs" in compare.get_json()["detail"]


def test_a_hidden_test_set_neither_clashes_nor_shows(app: Flask, client: FlaskClient) -> None:
    s, _, _, other = _clash(app)
    annotator = make_user(app, "ann")
    grant(app, other, annotator)  # a member of the test set named "S", not of "refs"
    found = client.get(f"/api/testsets/{s}/runs", headers=_token(app, annotator))
    assert found.status_code == 200 and found.get_json()["total"] == 0
    hidden = client.get(f"/api/testsets/id:{s}/runs", headers=_token(app, annotator))
    assert hidden.status_code == 404


def test_the_cli_refuses_it_too_and_takes_both_forms(app: Flask, runner: FlaskCliRunner) -> None:
    s, x, y, _ = _clash(app)
    refused = runner.invoke(args=["gate", f"id:{s}", "--baseline", str(x), "--candidate", "bm25"])
    assert refused.exit_code == 2
    assert f"'{x}' names two runs: run {x} ('bm25') by its id and run {y}" in refused.output
    refused = runner.invoke(args=["gate", str(s), "--baseline", "bm25", "--candidate", "bm25"])
    assert refused.exit_code == 2 and f"'{s}' names two test sets" in refused.output
    chosen = runner.invoke(
        args=["gate", f"id:{s}", "--baseline", f"name:{x}", "--candidate", f"id:{x}", "--json"]
    )
    verdict = json.loads(chosen.output)
    assert (verdict["baseline"], verdict["candidate"]) == (str(x), "bm25")
    fused = runner.invoke(args=["run", "fuse", "refs", str(x), "bm25", "--name", "f"])
    assert fused.exit_code == 1 and "names two runs" in fused.output
    fused = runner.invoke(args=["run", "fuse", "refs", f"name:{x}", "bm25", "--name", "f"])
    assert fused.exit_code == 0, fused.output


def test_judges_by_reference(app: Flask, client: FlaskClient, admin_id: int) -> None:
    with app.app_context():
        first = judges.add_judge("gpt", "http://127.0.0.1:9/v1", "m")
        second = judges.add_judge(str(first.id), "http://127.0.0.1:9/v1", "m")
        first_id, second_id = first.id, second.id
    admin = _token(app, admin_id)
    url = f"/api/judges/{first_id}/settings"
    refused = client.post(url, json={"timeout": 7}, headers=admin)
    assert refused.status_code == 400
    assert refused.get_json()["detail"] == (
        f"'{first_id}' names two judges: judge {first_id} ('gpt') by its id and judge "
        f"{second_id} by its name; write id:{first_id} or name:{first_id}"
    )
    done = client.post(f"/api/judges/name:{first_id}/settings", json={"timeout": 7}, headers=admin)
    assert done.status_code == 200 and done.get_json()["judge"] == str(first_id)


def test_the_python_client_names_an_int_by_its_id() -> None:
    assert (ref(17), ref("17"), ref("bm25/2026")) == ("id%3A17", "17", "bm25%2F2026")
    assert (named(17), named("17"), named("name:17")) == ("id:17", "17", "name:17")
