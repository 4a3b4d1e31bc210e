"""An unparsed answer says why: no grade in it, or a grade off the test set's scale."""

from __future__ import annotations

import html
import io
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.formats.llm_answer import unparsed_reason
from ndcg_labeler.services import judges, testsets
from ndcg_labeler.services.imports import ImportFile, import_files
from tests.factory import build_test_set, trec
from tests.judges.fake_llm import FakeLLM

OFF = "is off the test set's scale of 0 to 4"
NO_GRADE = "no grade found: the answer should end with '##final score: N', N from 0 to 4"


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I would rather not say.", NO_GRADE),
        ("", NO_GRADE),
        ("##final score: 9", "grade 9 is off the test set's scale of 0 to 4"),
        ("Final score: -1", "grade -1 is off the test set's scale of 0 to 4"),
        ('{"score": 2.5}', "grade 2.5 is not a whole grade of the scale 0 to 4"),
        # The last statement is the one read, as parse_answer_grade reads it.
        ("##final score: 3\nno, ##final score: 12", f"grade 12 {OFF}"),
    ],
)
def test_the_reason_names_what_was_read(answer: str, reason: str) -> None:
    assert unparsed_reason(answer, 4) == reason


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()


def test_a_run_stores_the_reason_and_the_page_shows_it(
    app: Flask, runner: FlaskCliRunner, llm: FakeLLM, as_admin: Any
) -> None:
    corpus = {"d1": "ANSWER9 off the scale", "d2": "GARBAGE", "d3": "ANSWER4 fine"}
    with app.app_context():
        test_set = build_test_set("wide", {"q1": "refunds"}, corpus=corpus, scale=4)
        pool = io.BytesIO(trec({"q1": ["d1", "d2", "d3"]}))
        import_files(test_set, pool=ImportFile(pool, "pool.trec"))
        judges.add_judge("j", llm.url, "m", timeout=5)
    result = runner.invoke(args=["judges", "run", "wide", "--judge", "j", "--pairs", "all"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        rows = db.session.execute(
            sa.text(
                "SELECT c.docid, m.status, m.error FROM machine_judgment m "
                "JOIN chunk c ON c.id = m.chunk_id"
            )
        )
        found = {docid: (status, error) for docid, status, error in rows}
        ids = testsets.require_by_name("wide").id, judges.require_judge("j").id
    assert found == {
        "d1": ("unparsed", "grade 9 is off the test set's scale of 0 to 4"),
        "d2": ("unparsed", NO_GRADE),
        "d3": ("labeled", ""),
    }
    url = "/test-sets/{}/judges/{}".format(*ids)
    page = html.unescape(as_admin.get(url).get_data(as_text=True))
    assert "grade 9 is off the test set's scale of 0 to 4" in page
    assert NO_GRADE in page


def test_an_ensembles_unparsed_answer_names_its_members_reasons(
    app: Flask, runner: FlaskCliRunner, llm: FakeLLM
) -> None:
    corpus = {"d1": "ANSWER9 off the scale", "d2": "GARBAGE", "d3": "ANSWER4 fine"}
    with app.app_context():
        test_set = build_test_set("wide", {"q1": "refunds"}, corpus=corpus, scale=4)
        pool = io.BytesIO(trec({"q1": ["d1", "d2", "d3"]}))
        import_files(test_set, pool=ImportFile(pool, "pool.trec"))
        judges.add_judge("a", llm.url, "m", timeout=5)
        judges.add_judge("b", llm.url, "m", timeout=5)
    made = runner.invoke(args=["judges", "ensemble", "both", "--member", "a", "--member", "b"])
    assert made.exit_code == 0, made.output
    result = runner.invoke(args=["judges", "run", "wide", "--judge", "both", "--pairs", "all"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        rows = db.session.execute(
            sa.text(
                "SELECT c.docid, m.status, m.error FROM machine_judgment m "
                "JOIN chunk c ON c.id = m.chunk_id JOIN judge j ON j.id = m.judge_id "
                "WHERE j.name = 'both'"
            )
        )
        found = {docid: (status, error) for docid, status, error in rows}
    off = "grade 9 is off the test set's scale of 0 to 4"
    assert found == {
        "d1": ("unparsed", f"no readable grade from a ({off}); b ({off})"),
        "d2": ("unparsed", f"no readable grade from a ({NO_GRADE}); b ({NO_GRADE})"),
        "d3": ("labeled", ""),
    }
