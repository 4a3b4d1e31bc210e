"""Budgets and prices typed in the browser or on the command line: text read by one reader,
refused in one sentence naming the range and what was typed. A budget the browser could not
read never becomes "no budget": the run is not started."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job
from ndcg_labeler.services import judges, testsets
from tests.factory import build_test_set

BUDGET = "the budget must be a number of dollars more than 0 and at most 1000000"
INPUT = "the input price must be a number from 0 to 10000 dollars per million tokens"


@pytest.fixture
def ids(app: Flask) -> tuple[int, int]:
    with app.app_context():
        test_set = build_test_set("money", {"q1": "refunds"}, [("q1", "d1", 0)], {"d1": "x"})
        judge = judges.add_judge("gpt", "http://127.0.0.1:9/v1", "m")
        judge.input_price, judge.output_price = 1.0, 2.0
        db.session.commit()
        return test_set.id, judge.id


def _jobs(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(sa.select(sa.func.count()).select_from(Job))


def _text(response: Any) -> str:
    return html.unescape(response.get_data(as_text=True))


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("$2.50", f"{BUDGET}, not '$2.50'"),
        ("2,50", f"{BUDGET}, not '2,50'"),
        ("0", f"{BUDGET}, not 0"),
        ("-1", f"{BUDGET}, not -1"),
        ("nan", f"{BUDGET}, not 'nan'"),
    ],
)
def test_a_budget_that_is_no_number_starts_nothing_and_says_why(
    app: Flask,
    runner: FlaskCliRunner,
    as_admin: Any,
    ids: tuple[int, int],
    typed: str,
    message: str,
) -> None:
    base = "/test-sets/{}/judges/{}".format(*ids)
    page = as_admin.post(base, data={"pairs": "all", "max_cost": typed})
    assert page.status_code == 200 and f'id="max_cost-error">{message}<' in _text(page)
    again = as_admin.post(
        f"{base}/again", data={"again-which": "failed", "again-max_cost": typed},
        follow_redirects=True,
    )  # fmt: skip
    assert f"Ask again: {message}" in _text(again)
    probe = as_admin.post(
        f"{base}/probe", data={"probe-pairs": "5", "probe-max_cost": typed}, follow_redirects=True
    )
    assert f"Probe: {message}" in _text(probe)
    assert _jobs(app) == 0
    for command in (["run", "money"], ["ask-again", "money"], ["probe", "money"]):
        cli = runner.invoke(args=["judges", *command, "--judge", "gpt", "--max-cost", typed])
        assert cli.exit_code == 1 and f"Error: {message}" in cli.output, (command, cli.output)


def test_budget_and_price_fields_are_text_inputs(as_admin: Any, ids: tuple[int, int]) -> None:
    page = as_admin.get("/test-sets/{}/judges/{}".format(*ids)).get_data(as_text=True)
    names = ("max_cost", "again-max_cost", "probe-max_cost")
    names += ("prices-input_price", "prices-output_price")
    for name in names:
        tag = re.search(rf'<input[^>]*name="{name}"[^>]*>', page)
        assert tag is not None, name
        assert 'type="text"' in tag.group(0) and 'inputmode="decimal"' in tag.group(0), tag


def test_a_price_that_is_no_number_is_refused_in_its_words(
    app: Flask, as_admin: Any, ids: tuple[int, int]
) -> None:
    url = "/test-sets/{}/judges/{}/prices".format(*ids)
    bad = as_admin.post(url, data={"prices-input_price": "$0.15"}, follow_redirects=True)
    assert f"Prices: {INPUT}, not '$0.15'" in _text(bad)
    with app.app_context():
        judge = judges.require_judge("gpt")
        assert (judge.input_price, judge.output_price) == (1.0, 2.0)  # unchanged
    # Empty: unknown, as before.
    as_admin.post(url, data={"prices-input_price": " ", "prices-output_price": "0.6"})
    with app.app_context():
        judge = judges.require_judge("gpt")
        assert (judge.input_price, judge.output_price) == (None, 0.6)
        assert testsets.require_by_name("money").id == ids[0]


@pytest.mark.parametrize(
    ("dollars", "shown"),
    [
        (None, "unknown (no prices set)"),
        (0, "$0.00"),
        (3.1, "$3.10"),
        (1234.5, "$1,234.50"),
        (0.0042, "$0.0042"),
        # Below a hundredth of a cent: two significant digits, never "2.1e-05".
        (0.000021, "$0.000021"),
        (0.0000012345, "$0.0000012"),
        (0.00009999, "$0.0001"),
    ],
)
def test_money_is_never_in_scientific_notation(dollars: float | None, shown: str) -> None:
    from ndcg_labeler.services import judge_costs

    assert judge_costs.money(dollars) == shown


def test_a_sample_size_or_seed_the_browser_cannot_read_is_refused_not_replaced(
    app: Flask, as_admin: Any, ids: tuple[int, int]
) -> None:
    from ndcg_labeler.models import AuditSample

    base = "/test-sets/{}/judges/{}".format(*ids)
    page = as_admin.get(base).get_data(as_text=True)
    for name in ("sample", "audit-seed"):
        tag = re.search(rf'<input[^>]*name="{name}"[^>]*>', page)
        assert tag is not None and 'type="text"' in tag.group(0), name
        assert 'inputmode="numeric"' in tag.group(0), name
    # A number input would send "1,000" as "": a sample of 100, silently.
    sent = as_admin.post(base, data={"pairs": "sample", "sample": "1,000"})
    wrong = "the sample size must be a whole number of at least 1, not '1,000'"
    assert sent.status_code == 200 and f'id="sample-error">{wrong}<' in _text(sent)
    # Empty: the default sample of 100, as the form says.
    assert as_admin.post(base, data={"pairs": "sample", "sample": ""}).status_code == 302
    with app.app_context():
        job = db.session.scalars(sa.select(Job)).one()
        assert job.params["pairs"] == "sample:100"
    # A seed that is no number would have drawn (and stored) a random seed.
    drawn = as_admin.post(f"{base}/audit", data={"audit-queries": "1", "audit-seed": "seven"})
    wrong = "the seed must be a whole number from 0 to 9223372036854775807, not 'seven'"
    assert drawn.status_code == 200 and f'id="audit-seed-error">{wrong}<' in _text(drawn)
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(AuditSample)) == 0
    big = as_admin.post(
        f"{base}/audit", data={"audit-queries": "1", "audit-seed": "9223372036854775807"}
    )
    assert big.status_code == 302
