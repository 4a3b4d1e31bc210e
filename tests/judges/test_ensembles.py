"""Issue 31 items 2-4, offline: few-shot prompts from the set's own labels, ensembles of two fake
"models" on 127.0.0.1, uncertain-first queueing, and the machine-vs-people queue."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import (
    AuditSample,
    AuditSampleQuery,
    Chunk,
    Judge,
    MachineConflict,
    MachineJudgment,
    Pair,
    Query,
    TestSet,
    User,
)
from ndcg_labeler.services import ensembles, judges, labeling
from ndcg_labeler.services import runs as run_service
from tests.factory import grade, make_user, trec
from tests.judges.two_models import NOTE, PAIRS, QUERIES, TwoModels, build_ens_set, quadratic_kappa


@pytest.fixture
def llm() -> Iterator[TwoModels]:
    server = TwoModels().start()
    yield server
    server.stop()


@pytest.fixture
def ens_set(app: Flask, llm: TwoModels) -> int:
    """Seven queries, fifteen pool pairs; ann graded the first twelve (d31 with a note)."""
    make_user(app, "ann")
    with app.app_context():
        test_set_id = build_ens_set(llm.url)
        db.session.remove()
    return test_set_id


def _cli(runner: FlaskCliRunner, *args: str) -> str:
    result = runner.invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _answers(judge: str) -> dict[str, tuple[str, int | None, int | None]]:
    """{docid: (status, grade, spread)} of a judge's answers."""
    rows = db.session.execute(
        sa.select(
            Chunk.docid, MachineJudgment.status, MachineJudgment.grade, MachineJudgment.spread
        )
        .join(Chunk, Chunk.id == MachineJudgment.chunk_id)
        .join(Judge, Judge.id == MachineJudgment.judge_id)
        .where(Judge.name == judge)
    )
    return {d: (s, g, sp) for d, s, g, sp in rows}


def test_combine_rules_by_hand() -> None:
    """Median: the middle grade, of an even count the lower; majority: a tie goes lower."""
    assert ensembles.combine_grades([3, 0, 2], "median") == 2
    assert ensembles.combine_grades([1, 2], "median") == 1
    assert ensembles.combine_grades([3, 1, 3, 0], "median") == 1
    assert ensembles.combine_grades([0, 2, 3], "majority") == 0
    assert ensembles.combine_grades([3, 1, 3], "majority") == 3
    assert ensembles.combine_grades([2, 2, 1, 1], "majority") == 1


def test_ensemble_stores_members_combined_grade_spread_and_kappas(
    app: Flask, runner: FlaskCliRunner, ens_set: int
) -> None:
    out = _cli(runner, "judges", "ensemble", "duo", "--member", "alpha", "--member", "beta")
    assert "Ensemble duo added: alpha, beta, combined by median." in out
    report = json.loads(
        _cli(runner, "judges", "run", "ens", "--judge", "duo", "--pairs", "all", "--json")
    )
    assert (report["judge"], report["requested"], report["labeled"], report["failed"]) == (
        "duo",
        15,
        15,
        0,
    )
    with app.app_context():
        duo, alpha, beta = _answers("duo"), _answers("alpha"), _answers("beta")
        for _, d, _, a, b in PAIRS:
            assert alpha[d][:2] == ("labeled", a) and beta[d][:2] == ("labeled", b)
            # The lower middle of two grades is the smaller; the spread is |a - b|.
            assert duo[d] == ("labeled", min(a, b), abs(a - b))
        answer = db.session.scalar(
            sa.select(MachineJudgment.raw_answer)
            .join(Judge, Judge.id == MachineJudgment.judge_id)
            .join(Chunk, Chunk.id == MachineJudgment.chunk_id)
            .where(Judge.name == "duo", Chunk.docid == "d31")
        )
        assert "[alpha: 3] alpha reasons" in answer and "[beta: 1] beta reasons" in answer
        test_set = db.session.get_one(TestSet, ens_set)
        found = ensembles.calibration_extras(
            test_set, db.session.scalar(sa.select(Judge).where(Judge.name == "duo"))
        )
        db.session.remove()
    graded = [p for p in PAIRS if p[2] is not None]
    human = [p[2] for p in graded]
    expected = {
        "duo": [min(p[3], p[4]) for p in graded],
        "alpha": [p[3] for p in graded],
        "beta": [p[4] for p in graded],
    }
    rows = {row["judge"]: row for row in found["members"]}
    assert [row["judge"] for row in found["members"]] == ["duo", "alpha", "beta"]
    for name, machine in expected.items():
        want = quadratic_kappa(human, machine)
        assert rows[name]["pairs"] == 12
        assert rows[name]["kappa_quadratic"] == pytest.approx(want)
    # By spread over the 15 pairs: 0 on 6, 1 on 3... as listed in PAIRS.
    spreads = [abs(p[3] - p[4]) for p in PAIRS]
    assert found["uncertainty"]["by_spread"] == {s: spreads.count(s) for s in sorted(set(spreads))}
    assert found["uncertainty"]["disagreeing"] == sum(1 for s in spreads if s)
    # Worst disagreements: d51 (people 0, duo 3) first, then the 2-step ones by qid.
    worst = [(w["docid"], w["human_grade"], w["machine_grade"]) for w in found["worst"]]
    assert worst[:3] == [("d51", 0, 3), ("d31", 3, 1), ("d61", 2, 0)]
    assert NOTE in found["worst"][1]["notes"]


def test_uncertain_first_puts_the_members_disagreements_first(
    app: Flask, runner: FlaskCliRunner, ens_set: int
) -> None:
    _cli(runner, "judges", "ensemble", "duo", "--member", "alpha", "--member", "beta")
    _cli(runner, "judges", "run", "ens", "--judge", "duo", "--pairs", "unjudged")
    result = runner.invoke(args=["pool", "ens", "--order-by-judge", "alpha", "--uncertain-first"])
    assert result.exit_code == 1 and "needs an ensemble" in result.output
    out = _cli(runner, "pool", "ens", "--order-by-judge", "duo", "--uncertain-first")
    # The open pairs are q7's: d71 (spread 3) and d72 (spread 1) move; d73 (0) stays.
    assert "Moved 2 queued pairs" in out
    with app.app_context():
        rows = db.session.execute(
            sa.select(Chunk.docid, Pair.priority).join(Chunk, Chunk.id == Pair.chunk_id)
        )
        priority = {str(docid): int(p) for docid, p in rows}
        assert (priority["d71"], priority["d72"]) == (-2, -1) and priority["d73"] >= 0
        make_user(app, "carl")
        carl = db.session.scalar(sa.select(User).where(User.username == "carl"))
        first = labeling.next_pair(db.session.get_one(TestSet, ens_set), carl)
        assert first is not None and db.session.get_one(Chunk, first.chunk_id).docid == "d71"
        db.session.remove()


def test_few_shot_examples_follow_the_rules_and_make_a_new_version(
    app: Flask, runner: FlaskCliRunner, ens_set: int, llm: TwoModels
) -> None:
    make_user(app, "bob")
    with app.app_context():
        test_set = db.session.get_one(TestSet, ens_set)
        grade(test_set, "q2", "d21", 3, "bob")  # ann 2, bob 3: no final grade
        grade(test_set, "q4", "d41", 1, "bob")  # agreed: final
        alpha = db.session.scalar(sa.select(Judge).where(Judge.name == "alpha"))
        q5 = db.session.scalar(sa.select(Query.id).where(Query.qid == "q5"))
        sample = AuditSample(test_set_id=test_set.id, judge_id=alpha.id, seed=1)
        db.session.add(sample)
        db.session.flush()
        db.session.add(AuditSampleQuery(sample_id=sample.id, position=0, query_id=q5))
        db.session.commit()
        db.session.remove()
    _cli(runner, "judges", "run", "ens", "--judge", "alpha", "--pairs", "human")
    zero_shot = len(llm.requests)
    assert "Judge alpha: 4 few-shot" in _cli(runner, "judges", "few-shot", "alpha", "4")
    report = json.loads(
        _cli(runner, "judges", "run", "ens", "--judge", "alpha", "--pairs", "human", "--json")
    )
    assert report["requested"] == 12 and report["labeled"] == 12  # a new version: asked afresh
    prompts = [r["body"]["messages"][0]["content"] for r in llm.requests[zero_shot:]]
    assert len(prompts) == 12
    docs = {d: (q, h) for q, d, h, _, _ in PAIRS}
    for prompt in prompts:
        examples, _, pair = prompt.partition("Now the pair to grade.")
        judged = re.search(r"Passage: G\d\d passage of (d\d\d)", pair)
        assert judged is not None
        qid = docs[judged.group(1)][0]
        shown = re.findall(r"Example passage: G\d\d passage of (d\d\d)", examples)
        grades = [int(g) for g in re.findall(r"People's grade: (\d)", examples)]
        # Balanced: one example of each grade; never the judged query, the audit sample's
        # query (q5) or the pair without a final grade (d21); each with people's grade.
        assert sorted(grades) == [0, 1, 2, 3]
        assert all(docs[d][0] not in (qid, "q5") and d != "d21" for d in shown)
        assert [docs[d][1] for d in shown] == grades
        assert QUERIES[qid] not in examples
        if qid == "q1":  # the only grade-3 example left is d31, with ann's note
            assert "d31" in shown and f"People's explanation: {NOTE}" in examples
    with app.app_context():
        test_set = db.session.get_one(TestSet, ens_set)
        alpha = db.session.scalar(sa.select(Judge).where(Judge.name == "alpha"))
        found = ensembles.calibration_extras(test_set, alpha)
        agreement = judges.judge_agreement(test_set, alpha)
        db.session.remove()
    with app.app_context():  # K below the number of grades: both ends of the scale
        test_set = db.session.get_one(TestSet, ens_set)
        alpha = db.session.scalar(sa.select(Judge).where(Judge.name == "alpha"))
        ensembles.set_few_shot(alpha, 2)
        q1 = db.session.scalar(sa.select(Query.id).where(Query.qid == "q1"))
        pair = ensembles.judge_shots(test_set, alpha).examples_for(q1)
        assert [ex.grade for ex in pair] == [0, 3] and pair[1].docid == "d31"
        db.session.remove()
    versions = [(v["few_shot"], v["current"], v["pairs"]) for v in found["versions"]]
    assert versions == [(4, True, 12), (0, False, 12)]
    assert agreement["prompt_version"] == found["versions"][0]["prompt_version"]


def test_person_vs_machine_conflicts_open_follow_and_resolve(
    app: Flask, runner: FlaskCliRunner, ens_set: int
) -> None:
    _cli(runner, "judges", "run", "ens", "--judge", "alpha", "--pairs", "human")
    listed = json.loads(_cli(runner, "judges", "conflicts", "ens", "--json"))
    # Alpha is 2+ steps from ann only on d51 (0 vs 3); d52 (2 vs 3) is one step.
    assert [(c["docid"], c["human_grade"], c["machine_grade"], c["steps"]) for c in listed] == [
        ("d51", 0, 3, 3)
    ]
    with app.app_context():
        test_set = db.session.get_one(TestSet, ens_set)
        grade(test_set, "q5", "d51", 2, "ann")  # one step now: withdrawn
        assert db.session.scalar(sa.select(sa.func.count()).select_from(MachineConflict)) == 0
        grade(test_set, "q5", "d52", 0, "ann")  # three steps from alpha's 3: opened
        db.session.remove()
    listed = json.loads(_cli(runner, "judges", "conflicts", "ens", "--json"))
    assert [(c["docid"], c["person"], c["human_grade"], c["machine_grade"]) for c in listed] == [
        ("d52", "ann", 0, 3)
    ]
    out = _cli(runner, "judges", "resolve", "ens", str(listed[0]["id"]), "--as", "machine")
    assert "the machine was right" in out
    assert json.loads(_cli(runner, "judges", "conflicts", "ens", "--json")) == []
    resolved = json.loads(_cli(runner, "judges", "conflicts", "ens", "--resolved", "--json"))
    assert [c["resolution"] for c in resolved] == ["machine"]
    result = runner.invoke(
        args=["judges", "resolve", "ens", str(listed[0]["id"]), "--as", "people"]
    )
    assert result.exit_code == 1 and "resolved already" in result.output


def test_the_pages_define_show_confirm_and_resolve(app: Flask, as_admin: Any, ens_set: int) -> None:
    added = as_admin.post(
        "/judges/ensembles/new",
        data={"name": "duo", "members": ["alpha", "beta"], "combine": "median"},
    )
    assert added.status_code == 302
    form = {"name": "gamma", "base_url": "http://127.0.0.1:9/v1", "model": "g", "few_shot": "3"}
    form |= {"temperature": "0", "max_tokens": "64", "timeout": "5", "concurrency": "1"}
    assert as_admin.post("/judges/", data={**form, "requests_per_minute": "0"}).status_code == 302
    with app.app_context():
        assert judges.require_judge("gamma").few_shot == 3
        test_set = db.session.get_one(TestSet, ens_set)
        pool = {"q7": ["d71", "d72", "d73"]}
        run_service.upload_run(test_set, io.BytesIO(trec(pool)), "a.trec", "A", None)
        judges.run_judge(test_set, judges.require_judge("duo"), "all")
        ids = {j.name: j.id for j in judges.list_judges()}
        q7 = db.session.scalar(sa.select(Query.id).where(Query.qid == "q7"))
        d71 = db.session.scalar(sa.select(Chunk.id).where(Chunk.docid == "d71"))
        run_id = run_service.list_runs(test_set)[0].id
        db.session.remove()
    graded = [p for p in PAIRS if p[2] is not None]
    duo_kappa = quadratic_kappa([p[2] for p in graded], [min(p[3], p[4]) for p in graded])
    page = as_admin.get(f"/test-sets/{ens_set}/judges/{ids['duo']}").get_data(as_text=True)
    members = page.split('id="ensemble-members"', 1)[1].split("</table>", 1)[0]
    assert "duo (ensemble)" in members and ">alpha<" in members and ">beta<" in members
    assert f"{duo_kappa:.3f}" in members
    assert "disagree on <strong>8</strong> of 15 pairs" in page  # spreads above 0 in PAIRS
    worst = page.split('id="worst-disagreements"', 1)[1].split("</tr>", 2)[1]
    assert "d51" in worst and "[alpha: 3]" in worst  # both answers and the reasoning
    alpha_url = f"/test-sets/{ens_set}/judges/{ids['alpha']}"
    assert "zero-shot (current)" in as_admin.get(alpha_url).get_data(as_text=True)
    assert as_admin.post(f"{alpha_url}/few-shot", data={"k": "2"}).status_code == 302
    assert "few-shot, K = 2" not in as_admin.get(alpha_url).get_data(as_text=True)  # not run yet
    with app.app_context():
        assert judges.require_judge("alpha").few_shot == 2
        db.session.remove()
    # The drill-down under fill:duo: q7's chunks carry duo's grades; confirm or replace them.
    drill = f"/test-sets/{ens_set}/dashboard/runs/{run_id}/queries/{q7}/"
    shown = as_admin.get(drill + "?labels=fill:duo").get_data(as_text=True)
    assert "Confirm or replace the machine grade of d71" in shown and "Confirm 0 " in shown
    saved = as_admin.post(drill + "grade", data={"chunk_id": d71, "grade": "2", "version": "0"})
    assert saved.status_code == 302
    queue = as_admin.get(f"/test-sets/{ens_set}/judges/conflicts").get_data(as_text=True)
    rows = queue.split('id="conflicts-open"', 1)[1].split("</table>", 1)[0]
    # ann 2+ steps from alpha: d51; from beta: d12, d31, d51, d61; from duo: d31, d51, d61;
    # and the admin's 2 on d71 from alpha's 0 and duo's 0 (beta's 3 is one step).
    assert rows.count("<tr data-conflict=") == 10
    assert rows.count("<code>d71</code>") == 2 and "admin" in rows
    first = int(rows.split('<tr data-conflict="', 1)[1].split('"', 1)[0])
    url = f"/test-sets/{ens_set}/judges/conflicts/{first}/resolve"
    assert as_admin.post(url, data={"resolution": "people"}).status_code == 302
    queue = as_admin.get(f"/test-sets/{ens_set}/judges/conflicts").get_data(as_text=True)
    assert "Open (9)" in queue and "the person was right" in queue
