"""Judge messages count in words: "1 pair", "2 pairs", never "pair(s)"."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Judge, MachineJudgment, Pair, PromptVersion
from ndcg_labeler.services.judges import guards
from tests.factory import build


@pytest.mark.parametrize(("pairs", "said"), [(1, "1 compared pair;"), (2, "2 compared pairs;")])
def test_withheld_pair_figures_count_in_words(pairs: int, said: str) -> None:
    found = {"pairs": pairs, "kappa_quadratic": 0.5, "kappa_binary": 0.5, "mean_difference": 0}
    guards.guard_pairs(found)
    reason = found["withheld"]["kappa_quadratic"]["reason"]
    assert reason == f"from {said} at least 10 are needed"


def test_delete_and_few_shot_count_in_words(
    app: Flask, runner: FlaskCliRunner, as_admin: FlaskClient
) -> None:
    built = build(app, "ts", pool={"q1": ["d1"]})
    with app.app_context():
        judge = Judge(name="gpt", base_url="http://127.0.0.1:9/v1", model="m", max_tokens=64)
        db.session.add_all([judge, PromptVersion(sha256="0" * 64, template="t")])
        db.session.flush()
        pair = db.session.scalars(sa.select(Pair)).one()
        db.session.add(
            MachineJudgment(
                test_set_id=built.test_set_id,
                query_id=pair.query_id,
                chunk_id=pair.chunk_id,
                judge_id=judge.id,
                prompt_sha256="0" * 64,
                model="m",
                status="labeled",
                grade=1,
            )
        )
        db.session.commit()
        judge_id = judge.id
    shots = runner.invoke(args=["judges", "few-shot", "gpt", "1"])
    assert "Judge gpt: 1 few-shot example." in shots.output, shots.output
    page = as_admin.post(
        f"/test-sets/{built.test_set_id}/judges/{judge_id}/few-shot",
        data={"k": "2"},
        follow_redirects=True,
    ).get_data(as_text=True)
    assert "gpt now puts 2 examples in each prompt." in page
    asked = runner.invoke(args=["judges", "delete", "gpt"], input="n\n")
    assert "Delete judge gpt and its 1 machine label?" in asked.output, asked.output
    gone = runner.invoke(args=["judges", "delete", "gpt", "--yes"])
    assert "Deleted judge gpt and its 1 machine label." in gone.output, gone.output
