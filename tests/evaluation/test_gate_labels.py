"""The gate on machine labels: `--labels machine:JUDGE` and `fill:JUDGE`, CLI and API alike.

The gate scenario's runs (tests/evaluation/scenario.py) on a test set where people graded q2
only, and differently from the judge: r 0 and n1 1. The judge's answers are stored directly,
as a finished judge run leaves them: r grade 1 and n1, n2, n3 grade 0 in every query. By hand,
P_1 per query (q1..q6), candidate − baseline:

    machine:gpt   0, −1, −1, −1, 0, −1   (the judge everywhere: the scenario's own deltas)
    fill:gpt      0, +1, −1, −1, 0, −1   (q2 from people: the baseline's r is not relevant,
                                          the candidate's n1 is)
    human         0, +1, 0, 0, 0, 0      (no other query has a judged chunk: P_1 0 in both)
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from scipy import stats

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judge, MachineJudgment, PromptVersion, Query, TestSet, User
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.accounts import create_token
from tests.evaluation.scenario import BASELINE, CANDIDATE, QIDS, QUERIES, build_gate_set
from tests.factory import build_test_set, grant, trec

HUMAN_Q2 = [("q2", "r", 0), ("q2", "n1", 1), ("q2", "n2", 0), ("q2", "n3", 0)]
MACHINE_D = [0, -1, -1, -1, 0, -1]
FILL_D = [0, 1, -1, -1, 0, -1]
HUMAN_D = np.array([0.0, 1.0, 0.0, 0.0, 0.0, 0.0])


@pytest.fixture
def judged_gate(app: Flask) -> None:
    with app.app_context():
        test_set = build_test_set("mgate", QUERIES, HUMAN_Q2)
        run_service.upload_run(test_set, io.BytesIO(trec(BASELINE)), "b.trec", "base", None)
        run_service.upload_run(test_set, io.BytesIO(trec(CANDIDATE)), "c.trec", "cand", None)
        judge = Judge(name="gpt", base_url="http://127.0.0.1:9/v1", model="m", max_tokens=64)
        prompt = PromptVersion(sha256="0" * 64, template="")
        db.session.add_all([judge, prompt])
        db.session.flush()
        queries = dict(
            db.session.execute(
                sa.select(Query.qid, Query.id).where(Query.test_set_id == test_set.id)
            ).all()
        )
        chunks = dict(
            db.session.execute(
                sa.select(Chunk.docid, Chunk.id).where(Chunk.test_set_id == test_set.id)
            ).all()
        )
        db.session.add_all(
            MachineJudgment(
                test_set_id=test_set.id,
                query_id=queries[qid],
                chunk_id=chunks[docid],
                judge_id=judge.id,
                prompt_sha256=prompt.sha256,
                model="m",
                status="labeled",
                grade=1 if docid == "r" else 0,
            )
            for qid in QIDS
            for docid in ("r", "n1", "n2", "n3")
        )
        db.session.commit()
        db.session.remove()


def gate(runner: FlaskCliRunner, labels: str, *args: str):
    return runner.invoke(
        args=[
            "gate",
            "mgate",
            "--baseline",
            "base",
            "--candidate",
            "cand",
            "--measure",
            "P_1",
            "--labels",
            labels,
            *args,
        ]
    )


def test_machine_labels_decide_like_human_ones(runner: FlaskCliRunner, judged_gate: None) -> None:
    result = gate(runner, "machine:gpt", "--json")
    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert out["labels"] == "machine:gpt" and out["machine_labels"] is True
    m = out["measures"][0]
    assert m["outcome"] == "fail" and m["queries"] == 6
    assert m["delta"] == pytest.approx(sum(MACHINE_D) / 6)
    assert m["p_value"] == pytest.approx(stats.ttest_1samp(MACHINE_D, 0.0).pvalue)


def test_fill_takes_peoples_grades_first(runner: FlaskCliRunner, judged_gate: None) -> None:
    result = gate(runner, "fill:gpt", "--json")
    assert result.exit_code == 3, result.output  # mean −1/3, p ≈ 0.36: neither way
    out = json.loads(result.output)
    assert out["labels"] == "fill:gpt" and out["machine_labels"] is True
    m = out["measures"][0]
    assert m["outcome"] == "inconclusive" and m["queries"] == 6
    assert m["delta"] == pytest.approx(sum(FILL_D) / 6)
    assert m["p_value"] == pytest.approx(stats.ttest_1samp(FILL_D, 0.0).pvalue)
    assert m["p_noninferiority"] == pytest.approx(
        stats.ttest_1samp([d + 0.01 for d in FILL_D], 0.0, alternative="greater").pvalue
    )
    # The reports say the grades are partly a machine's.
    text = gate(runner, "fill:gpt").output
    assert "machine labels from judge gpt where a pair has no human grade" in text
    text = gate(runner, "machine:gpt").output
    assert "machine labels only, from judge gpt" in text


def test_people_alone_see_one_change(runner: FlaskCliRunner, judged_gate: None) -> None:
    result = gate(runner, "human", "--json")
    assert result.exit_code == 3
    out = json.loads(result.output)
    assert out["labels"] == "human" and out["machine_labels"] is False
    m = out["measures"][0]
    assert m["queries"] == 6 and m["delta"] == pytest.approx(HUMAN_D.mean())
    assert m["p_noninferiority"] == pytest.approx(
        stats.ttest_1samp(HUMAN_D + 0.01, 0.0, alternative="greater").pvalue
    )


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ("fill:nobody", "unknown judge 'nobody'"),
        ("machine:", "labels must be human, machine:JUDGE, fill:JUDGE or ppi:JUDGE"),
        ("ppi:nobody", "unknown judge 'nobody'"),
        ("ppi: ", "labels must be human, machine:JUDGE, fill:JUDGE or ppi:JUDGE"),
    ],
)
def test_unknown_judges_and_sources_exit_2(
    runner: FlaskCliRunner, judged_gate: None, labels: str, message: str
) -> None:
    result = gate(runner, labels)
    assert result.exit_code == 2
    assert result.output.strip().startswith("Error: ") and message in result.output


def test_the_api_gates_on_machine_labels(
    app: Flask, client: FlaskClient, admin_id: int, judged_gate: None
) -> None:
    with app.app_context():
        token = create_token(db.session.get(User, admin_id))
        db.session.remove()
    headers = {"Authorization": f"Bearer {token}"}
    body = {"baseline": "base", "candidate": "cand", "measure": "P_1", "labels": "machine:gpt"}
    response = client.post("/api/testsets/mgate/gate", json=body, headers=headers)
    assert response.status_code == 200
    out = response.get_json()
    assert out["outcome"] == "fail" and out["labels"] == "machine:gpt" and out["machine_labels"]
    junit = client.post("/api/testsets/mgate/gate?format=junit", json=body, headers=headers)
    assert b'name="labels" value="machine:gpt"' in junit.data
    assert b'name="machine_labels" value="true"' in junit.data
    fill = client.post(
        "/api/testsets/mgate/gate", json={**body, "labels": "fill:gpt"}, headers=headers
    )
    assert fill.get_json()["outcome"] == "inconclusive"
    bad = client.post(
        "/api/testsets/mgate/gate", json={**body, "labels": "fill:nobody"}, headers=headers
    )
    assert bad.status_code == 400 and "unknown judge 'nobody'" in bad.get_json()["detail"]


def test_a_blind_annotator_gets_the_verdict_but_not_the_worst_queries(
    app: Flask, client: FlaskClient, annotator_id: int
) -> None:
    # The API's per-query scores and compare answer 403 on a blind set; the gate's reports
    # must not list per-query values instead (cand's recip_rank on q6 is 1/4 by hand).
    test_set_id = build_gate_set(app, "blindgate")
    grant(app, test_set_id, annotator_id)
    with app.app_context():
        db.session.get_one(TestSet, test_set_id).judgments_per_pair = 2  # blind judging
        token = create_token(db.session.get_one(User, annotator_id))
        db.session.commit()
    headers = {"Authorization": f"Bearer {token}"}
    body = {"baseline": "base", "candidate": "cand", "measure": "recip_rank"}
    url = "/api/testsets/blindgate/gate"
    markdown = client.post(f"{url}?format=markdown", json=body, headers=headers)
    junit = client.post(f"{url}?format=junit", json=body, headers=headers)
    assert markdown.status_code == junit.status_code == 200
    text = markdown.get_data(as_text=True)
    assert "### Retrieval gate: ❌ failed" in text  # the verdict and the means stay
    assert "| q6 |" not in text and "0.2500" not in text
    assert "per-query figures are for admins" in text
    xml = junit.get_data(as_text=True)
    assert "q6: " not in xml and "<failure" in xml
    assert "per-query figures are for admins" in xml
