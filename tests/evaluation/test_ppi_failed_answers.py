"""A judge's failed and unparsed answers, counted beside every machine and PPI figure.

On ppi_scenario.py's set (20 queries, chunks a and b each: 40 pairs the judge answered) three
answers are spoiled by hand: (p001, a) failed, (p013, b) unparsed, and (p002, a) failed under a
second prompt version while its first answer kept a grade. A pair with no readable answer is
scored as unjudged, so 2 of the 40 pairs are; under fill:gpt only (p013, b) is, since people
graded every pair of the audited query p001 (the imported qrels).
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    Chunk,
    Judge,
    MachineJudgment,
    PromptVersion,
    Query,
    Run,
    TestSet,
    User,
)
from ndcg_labeler.services.accounts import create_token
from tests.evaluation.ppi_scenario import build_ppi_set

NOTE = "2 of 40 judge answers failed or were unparsed: counted as unjudged (not relevant)"
FILL_NOTE = (
    "1 of 40 judge answers failed or were unparsed where people gave no grade: "
    "counted as unjudged (not relevant)"
)


def _spoil(app: Flask) -> tuple[int, int, int]:
    """Spoil three answers as the module says; the set's id and the ids of runs A and B."""
    with app.app_context():
        ts = db.session.scalar(sa.select(TestSet.id).where(TestSet.name == "ppi"))
        judge = db.session.scalar(sa.select(Judge.id).where(Judge.name == "gpt"))

        def row(qid: str, docid: str) -> MachineJudgment:
            return db.session.scalars(
                sa.select(MachineJudgment)
                .join(Query, Query.id == MachineJudgment.query_id)
                .join(Chunk, Chunk.id == MachineJudgment.chunk_id)
                .where(Query.qid == qid, Chunk.docid == docid, MachineJudgment.test_set_id == ts)
            ).one()

        for (qid, docid), status in {("p001", "a"): "failed", ("p013", "b"): "unparsed"}.items():
            found = row(qid, docid)
            found.status, found.grade = status, None
        kept = row("p002", "a")
        db.session.add(PromptVersion(sha256="1" * 64, template="v2"))
        db.session.flush()
        db.session.add(
            MachineJudgment(
                test_set_id=ts,
                query_id=kept.query_id,
                chunk_id=kept.chunk_id,
                judge_id=judge,
                prompt_sha256="1" * 64,
                model="m",
                status="failed",
                grade=None,
            )
        )
        db.session.commit()
        runs = dict(
            db.session.execute(sa.select(Run.name, Run.id).where(Run.test_set_id == ts)).all()
        )
        db.session.remove()
        return ts, runs["A"], runs["B"]


def _json(runner: FlaskCliRunner, *args: str) -> dict:
    result = runner.invoke(args=[*args, "--json"])
    assert result.exit_code in (0, 1, 3), result.output
    return json.loads(result.output)


def test_run_score_and_compare_count_the_failed_answers(app: Flask, runner: FlaskCliRunner) -> None:
    build_ppi_set(app, "ppi")
    _spoil(app)
    for labels in ("ppi:gpt", "machine:gpt"):
        out = _json(runner, "run", "score", "ppi", "A", "--k", "1", "--labels", labels)
        assert (out["audit"]["judge_failed"], out["audit"]["judge_answers"]) == (2, 40)
        assert out["audit"]["judge_failed_note"] == NOTE
        assert out["audit"]["status"] == "12 of 20 queries audited"  # as before
        text = runner.invoke(args=["run", "score", "ppi", "A", "--k", "1", "--labels", labels])
        assert NOTE in text.output, labels
    basis = _json(runner, "run", "score", "ppi", "A", "--labels", "ppi:gpt")["ppi_basis"]
    assert basis["audit"]["judge_failed"] == 2
    fill = _json(runner, "run", "score", "ppi", "A", "--labels", "fill:gpt")["audit"]
    assert (fill["judge_failed"], fill["judge_answers"], fill["judge_failed_note"]) == (
        1,
        40,
        FILL_NOTE,
    )
    compare = ["run", "compare", "ppi", "A", "B", "--k", "1", "--labels", "ppi:gpt"]
    assert _json(runner, *compare)["audit"]["judge_failed"] == 2
    assert NOTE in runner.invoke(args=compare).output


def test_the_gate_counts_the_failed_answers(
    app: Flask, runner: FlaskCliRunner, as_admin: FlaskClient
) -> None:
    build_ppi_set(app, "ppi")
    ts, a, b = _spoil(app)
    for labels in ("ppi:gpt", "machine:gpt"):
        args = ["gate", "ppi", "--baseline", "A", "--candidate", "B", "--measure", "ndcg_cut_1"]
        args += ["--labels", labels]
        out = _json(runner, *args)
        assert (out["audit"]["judge_failed"], out["audit"]["judge_answers"]) == (2, 40)
        assert NOTE in runner.invoke(args=args).output, labels
        page = as_admin.get(
            f"/test-sets/{ts}/dashboard/gate/?baseline={a}&candidate={b}"
            f"&measure=ndcg_cut_1&labels={labels}"
        ).get_data(as_text=True)
        assert NOTE in page, labels
    assert out["measures"][0].get("ppi") is None
    ppi_out = _json(runner, *args[:-1], "ppi:gpt")
    assert ppi_out["measures"][0]["ppi"]["audit"]["judge_failed"] == 2


def test_the_dashboard_and_api_count_the_failed_answers(
    app: Flask, as_admin: FlaskClient, client: FlaskClient, admin_id: int
) -> None:
    build_ppi_set(app, "ppi")
    ts, a, b = _spoil(app)
    for url in (
        f"/test-sets/{ts}/dashboard/?k=1&labels=ppi:gpt",
        f"/test-sets/{ts}/dashboard/?k=1&labels=machine:gpt",
        f"/test-sets/{ts}/dashboard/runs/{a}?k=1&labels=ppi:gpt",
        f"/test-sets/{ts}/dashboard/compare/?run={a}&run={b}&k=1&labels=ppi:gpt",
    ):
        assert NOTE in as_admin.get(url).get_data(as_text=True), url
    with app.app_context():
        judge = db.session.scalar(sa.select(Judge.id).where(Judge.name == "gpt"))
    calibration = as_admin.get(f"/test-sets/{ts}/judges/{judge}").get_data(as_text=True)
    assert NOTE in calibration  # its machine means are machine:gpt's
    overview = as_admin.get(f"/test-sets/{ts}/dashboard/export/overview.json?labels=ppi:gpt")
    assert overview.get_json()["audit"]["judge_failed"] == 2
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        db.session.remove()
    scores = client.get(
        "/api/testsets/ppi/runs/A/scores?labels=ppi:gpt",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert scores.get_json()["audit"]["judge_failed"] == 2


def test_no_failed_answer_no_note(app: Flask, runner: FlaskCliRunner) -> None:
    build_ppi_set(app, "ppi")
    out = _json(runner, "run", "score", "ppi", "A", "--labels", "ppi:gpt")
    assert (out["audit"]["judge_failed"], out["audit"]["judge_answers"]) == (0, 40)
    assert out["audit"]["judge_failed_note"] is None
    text = runner.invoke(args=["run", "score", "ppi", "A", "--labels", "ppi:gpt"]).output
    assert "failed or were unparsed" not in text


def test_the_gate_says_how_much_was_audited_under_machine_and_fill_labels(
    app: Flask, runner: FlaskCliRunner, as_admin: FlaskClient, client: FlaskClient, admin_id: int
) -> None:
    """As the dashboard and `run score` say it beside machine figures: 12 of the 20 queries
    (the scenario's audited ones) in the CLI's report, on the gate page and in the API."""
    build_ppi_set(app, "ppi")
    ts, a, b = _spoil(app)
    audited = "12 of 20 queries audited"
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        db.session.remove()
    for labels, note in (("machine:gpt", NOTE), ("fill:gpt", FILL_NOTE)):
        args = ["gate", "ppi", "--baseline", "A", "--candidate", "B", "--measure", "ndcg_cut_1"]
        args += ["--labels", labels]
        text = runner.invoke(args=args).output
        assert f"from judge gpt; {audited}; {note}" in text or (
            f"where a pair has no human grade; {audited}; {note}" in text
        ), (labels, text)
        page = as_admin.get(
            f"/test-sets/{ts}/dashboard/gate/?baseline={a}&candidate={b}"
            f"&measure=ndcg_cut_1&labels={labels}"
        ).get_data(as_text=True)
        assert f"{audited}; {note}" in page, labels
        api = client.post(
            "/api/testsets/ppi/gate",
            json={"baseline": "A", "candidate": "B", "measure": "ndcg_cut_1", "labels": labels},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert api.get_json()["audit"]["status"] == audited, api.get_json()
