"""The audit sample's N, a probe's pairs and a judge's few-shot K: text as typed, refused in the
form and on the command line alike, in one sentence naming the range and what was typed (never
WTForms' "Not a valid integer value." nor click's), and nothing changed."""

from __future__ import annotations

import html

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import AuditSample, Job, Judge, Query
from tests.factory import build

POOL = {"q1": ["d1"], "q2": ["d2"], "q3": ["d3"], "q4": ["d4"], "q5": ["d5"]}
AUDIT = "N must be a whole number from 1 to 6, the test set's number of queries"
PAIRS = "the pairs to probe must be a whole number from 1 to 1000"
FEW_SHOT = "few-shot examples must be a whole number from 0 to 20"


@pytest.fixture
def ids(app: Flask) -> tuple[int, int]:
    """(test set id, judge id): set "ts" with q1..q6 and judge "gpt" (never asked)."""
    built = build(app, "ts", pool=POOL)
    with app.app_context():
        db.session.add(Query(test_set_id=built.test_set_id, qid="q6", text="no pool"))
        found = Judge(name="gpt", base_url="http://127.0.0.1:9/v1", model="m", max_tokens=64)
        db.session.add(found)
        db.session.commit()
        return built.test_set_id, found.id


def _unchanged(app: Flask) -> None:
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(AuditSample)) == 0
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Job)) == 0
        assert db.session.scalar(sa.select(Judge.few_shot)) == 0


def _page(response: object) -> str:
    return html.unescape(response.get_data(as_text=True))  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("typed", "shown"), [("four", "'four'"), ("1.5", "'1.5'"), ("9", "9"), ("0", "0")]
)
def test_the_audit_sample_size(
    app: Flask,
    runner: FlaskCliRunner,
    as_admin: FlaskClient,
    ids: tuple[int, int],
    typed: str,
    shown: str,
) -> None:
    message = f"{AUDIT}, not {shown}"
    cli = runner.invoke(args=["judges", "audit", "ts", "--judge", "gpt", "--queries", typed])
    assert cli.exit_code == 1 and f"Error: {message}" in cli.output, cli.output
    url = f"/test-sets/{ids[0]}/judges/{ids[1]}/audit"
    page = _page(as_admin.post(url, data={"audit-queries": typed}))
    assert message in page and "Not a valid" not in page, page[-3000:]
    _unchanged(app)


@pytest.mark.parametrize(("typed", "shown"), [("four", "'four'"), ("0", "0"), ("1001", "1001")])
def test_the_pairs_of_a_probe(
    app: Flask,
    runner: FlaskCliRunner,
    as_admin: FlaskClient,
    ids: tuple[int, int],
    typed: str,
    shown: str,
) -> None:
    message = f"{PAIRS}, not {shown}"
    cli = runner.invoke(args=["judges", "probe", "ts", "--judge", "gpt", "--pairs", typed])
    assert cli.exit_code == 1 and f"Error: {message}" in cli.output, cli.output
    url = f"/test-sets/{ids[0]}/judges/{ids[1]}/probe"
    page = _page(as_admin.post(url, data={"probe-pairs": typed}, follow_redirects=True))
    assert message in page and "Not a valid" not in page, page[-3000:]
    _unchanged(app)


@pytest.mark.parametrize(("typed", "shown"), [("three", "'three'"), ("21", "21"), ("-1", "-1")])
def test_the_few_shot_examples(
    app: Flask,
    runner: FlaskCliRunner,
    as_admin: FlaskClient,
    ids: tuple[int, int],
    typed: str,
    shown: str,
) -> None:
    message = f"{FEW_SHOT}, not {shown}"
    cli = runner.invoke(args=["judges", "few-shot", "gpt", "--", typed])
    assert cli.exit_code == 1 and f"Error: {message}" in cli.output, cli.output
    url = f"/test-sets/{ids[0]}/judges/{ids[1]}/few-shot"
    page = _page(as_admin.post(url, data={"k": typed}, follow_redirects=True))
    assert message in page and "Not a valid" not in page, page[-3000:]
    _unchanged(app)


SEED = "the seed must be a whole number from 0 to 9223372036854775807"


@pytest.mark.parametrize(("typed", "shown"), [("seven", "'seven'"), ("-1", "-1"), ("1.5", "'1.5'")])
def test_the_audit_seed(
    app: Flask,
    runner: FlaskCliRunner,
    as_admin: FlaskClient,
    ids: tuple[int, int],
    typed: str,
    shown: str,
) -> None:
    message = f"{SEED}, not {shown}"
    args = ["judges", "audit", "ts", "--judge", "gpt", "--queries", "3", "--seed", typed]
    cli = runner.invoke(args=args)
    assert cli.exit_code == 1 and f"Error: {message}" in cli.output, cli.output
    url = f"/test-sets/{ids[0]}/judges/{ids[1]}/audit"
    page = _page(as_admin.post(url, data={"audit-queries": "3", "audit-seed": typed}))
    assert message in page and "Not a valid" not in page, page[-3000:]
    _unchanged(app)
    drawn = runner.invoke(args=[*args[:-1], " 7 ", "--json"])
    assert drawn.exit_code == 0 and '"seed": 7' in drawn.output, drawn.output


@pytest.mark.parametrize(("typed", "shown"), [("ten", "'ten'"), ("0", "'0'"), ("²", "'²'")])
def test_the_agreement_k_reads_as_the_pages_k(
    runner: FlaskCliRunner, as_admin: FlaskClient, ids: tuple[int, int], typed: str, shown: str
) -> None:
    message = f"k must be a whole number from 1 to 100000, not {shown}"
    cli = runner.invoke(args=["judges", "agreement", "ts", "--judge", "gpt", "--k", typed])
    assert cli.exit_code == 1 and f"Error: {message}" in cli.output, cli.output
    page = as_admin.get(f"/test-sets/{ids[0]}/dashboard/", query_string={"k": typed})
    assert page.status_code == 400 and message in _page(page)


def test_the_fields_are_text_with_a_numeric_keyboard(
    as_admin: FlaskClient, ids: tuple[int, int]
) -> None:
    page = as_admin.get(f"/test-sets/{ids[0]}/judges/{ids[1]}").get_data(as_text=True)
    assert 'type="number"' not in page
    for name in ("audit-queries", "probe-pairs", "k"):
        assert (
            f'inputmode="numeric" name="{name}"' in page
            or f'inputmode="numeric" id="shots-{name}" name="{name}"' in page
            or (f'id="{name}" inputmode="numeric"' in page)
        ), name
