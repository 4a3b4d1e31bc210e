"""The agreement page's two tables as CSV downloads, and `flask agreement`'s per-query table
and CSV, on the 3-annotator fixture (tests/factory.build_team).

Expected figures are those worked out by hand in tests/team/test_agreement.py, checked here
again against scikit-learn (Cohen's kappa) and the krippendorff package (ordinal alpha):
    each two annotators agree on 2 of the 3 pairs both graded;
    Cohen quadratic / linear: alice/bob 26/29, 10/13; alice/carol 0, 1/4; bob/carol 2/3, 4/7;
    q1: 3 raters, 3 pairs, percent 7/9, Fleiss 20/29, alpha 395/416;
    q2: 3 raters, 2 pairs, percent 1/2, Fleiss 1/5, alpha -1/2.
"""

from __future__ import annotations

import csv
import io
import json

import krippendorff
import numpy as np
import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sklearn.metrics import cohen_kappa_score

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query
from tests.factory import build_team, judge, person

# Shared pairs of each two annotators (tests/factory.TEAM_JUDGMENTS), for the oracles.
SHARED = {
    ("alice", "bob"): ([3, 2, 0], [3, 1, 0]),  # q1/d1 d2 d3
    ("alice", "carol"): ([3, 2, 1], [3, 2, 3]),  # q1/d1 d2, q2/d4
    ("bob", "carol"): ([3, 1, 2], [3, 2, 2]),  # q1/d1 d2, q2/d5
}
HAND_COHEN = {
    ("alice", "bob"): (26 / 29, 10 / 13),
    ("alice", "carol"): (0.0, 1 / 4),
    ("bob", "carol"): (2 / 3, 4 / 7),
}
NAN = np.nan
# Raters x pairs of each query (alice, bob, carol), for krippendorff.alpha.
BY_QUERY = {
    "q1": [[3, 2, 0], [3, 1, 0], [3, 2, NAN]],  # d1 d2 d3
    "q2": [[1, NAN, 0], [NAN, 2, NAN], [3, 2, NAN]],  # d4 d5 d6
}
HAND_QUERIES = {
    "q1": (3, 3, 7 / 9, 20 / 29, 395 / 416),
    "q2": (3, 2, 1 / 2, 1 / 5, -1 / 2),
}


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_the_oracles_agree_with_the_hand_figures() -> None:
    """The independent libraries give the hand-worked figures the tests below expect."""
    for (a, b), (first, second) in SHARED.items():
        quadratic, linear = HAND_COHEN[(a, b)]
        scale = [0, 1, 2, 3]
        got_q = cohen_kappa_score(first, second, labels=scale, weights="quadratic")
        got_l = cohen_kappa_score(first, second, labels=scale, weights="linear")
        assert (got_q, got_l) == (pytest.approx(quadratic), pytest.approx(linear))
    for qid, data in BY_QUERY.items():
        alpha = krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
        )
        assert alpha == pytest.approx(HAND_QUERIES[qid][4])


def _check_pairs(rows: list[list[str]]) -> None:
    assert rows[0] == ["a", "b", "n", "percent", "kappa_quadratic", "kappa_linear"]
    assert [row[:3] for row in rows[1:]] == [
        ["alice", "bob", "3"],
        ["alice", "carol", "3"],
        ["bob", "carol", "3"],
    ]
    for row in rows[1:]:
        quadratic, linear = HAND_COHEN[(row[0], row[1])]
        assert float(row[3]) == pytest.approx(2 / 3)
        assert float(row[4]) == pytest.approx(quadratic, abs=1e-12)
        assert float(row[5]) == pytest.approx(linear, abs=1e-12)


def _check_queries(rows: list[list[str]], order: list[str]) -> None:
    assert rows[0] == ["qid", "text", "raters", "pairs_with_2plus", "percent", "fleiss", "alpha"]
    assert [row[0] for row in rows[1:]] == order
    for row in rows[1:]:
        raters, pairs, percent, fleiss, alpha = HAND_QUERIES[row[0]]
        assert row[1] == f"text of {row[0]}"
        assert (int(row[2]), int(row[3])) == (raters, pairs)
        assert float(row[4]) == pytest.approx(percent)
        assert float(row[5]) == pytest.approx(fleiss)
        assert float(row[6]) == pytest.approx(alpha)


def test_the_page_offers_both_tables_as_csv(app: Flask, as_admin: FlaskClient) -> None:
    team = build_team(app)
    page = as_admin.get(f"/test-sets/{team.id}/agreement").get_data(as_text=True)
    assert f'href="/test-sets/{team.id}/agreement-pairs.csv"' in page
    assert f'href="/test-sets/{team.id}/agreement-queries.csv?sort=qid"' in page
    pairs = as_admin.get(f"/test-sets/{team.id}/agreement-pairs.csv")
    assert pairs.status_code == 200 and pairs.mimetype == "text/csv"
    assert "attachment" in pairs.headers["Content-Disposition"]
    _check_pairs(_rows(pairs.get_data(as_text=True)))
    queries = as_admin.get(f"/test-sets/{team.id}/agreement-queries.csv")
    _check_queries(_rows(queries.get_data(as_text=True)), ["q1", "q2"])
    # The page's sort carries over: lowest alpha first puts q2 (-1/2) before q1.
    by_alpha = as_admin.get(f"/test-sets/{team.id}/agreement-queries.csv?sort=alpha")
    _check_queries(_rows(by_alpha.get_data(as_text=True)), ["q2", "q1"])
    sorted_page = as_admin.get(f"/test-sets/{team.id}/agreement?sort=alpha").get_data(as_text=True)
    assert f'href="/test-sets/{team.id}/agreement-queries.csv?sort=alpha"' in sorted_page


def test_the_csv_defuses_formulas(app: Flask, as_admin: FlaskClient) -> None:
    """A name or a query text starting like a formula is written with a leading apostrophe,
    as the People CSV and the other exports write it."""
    team = build_team(app)
    person(app, "=cmd|' /C calc'!A0")
    judge(app, team.id, "q1", "d1", "=cmd|' /C calc'!A0", grade=3)
    with app.app_context():
        db.session.execute(
            sa.update(Query).where(Query.qid == "q1").values(text='=HYPERLINK("http://x")')
        )
        db.session.commit()
    pairs = _rows(as_admin.get(f"/test-sets/{team.id}/agreement-pairs.csv").get_data(as_text=True))
    assert ["'=cmd|' /C calc'!A0", "alice"] in [row[:2] for row in pairs[1:]] or [
        "alice",
        "'=cmd|' /C calc'!A0",
    ] in [row[:2] for row in pairs[1:]]
    assert not any(cell.startswith("=") for row in pairs for cell in row)
    queries = _rows(
        as_admin.get(f"/test-sets/{team.id}/agreement-queries.csv").get_data(as_text=True)
    )
    assert queries[1][:2] == ["q1", '\'=HYPERLINK("http://x")']


def test_cli_csv_prints_each_table(app: Flask, runner: FlaskCliRunner) -> None:
    build_team(app, "Team set")
    pairs = runner.invoke(args=["agreement", "Team set", "--csv"])
    assert pairs.exit_code == 0, pairs.output
    _check_pairs(_rows(pairs.output))
    queries = runner.invoke(args=["agreement", "Team set", "--csv", "--per-query"])
    assert queries.exit_code == 0, queries.output
    _check_queries(_rows(queries.output), ["q1", "q2"])
    both = runner.invoke(args=["agreement", "Team set", "--csv", "--json"])
    assert both.exit_code == 2 and "--csv" in both.output


def test_cli_per_query_table_and_json_key(app: Flask, runner: FlaskCliRunner) -> None:
    build_team(app, "Team set")
    text = runner.invoke(args=["agreement", "Team set", "--per-query"])
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert "Agreement per query (queries with a pair graded by 2 or more):" in lines
    header = lines.index("Agreement per query (queries with a pair graded by 2 or more):") + 1
    assert lines[header].split() == ["qid", "raters", "pairs", "percent", "Fleiss", "alpha"]
    # percent 7/9 = 77.8%, Fleiss 20/29 = 0.690, alpha 395/416 = 0.950; q2 50.0%, 0.200, -0.500
    assert lines[header + 1].split() == ["q1", "3", "3", "77.8%", "0.690", "0.950"]
    assert lines[header + 2].split() == ["q2", "3", "2", "50.0%", "0.200", "-0.500"]
    # The existing summary is still printed above it.
    assert "Fleiss' kappa:                0.544" in text.output
    data = json.loads(runner.invoke(args=["agreement", "Team set", "--json", "--per-query"]).output)
    assert list(data) == [
        "pairs_with_2plus",
        "percent_agreement",
        "fleiss_kappa",
        "krippendorff_alpha_ordinal",
        "cohen",
        "queries",
    ]
    assert [row["qid"] for row in data["queries"]] == ["q1", "q2"]
    for row in data["queries"]:
        assert list(row) == [
            "qid",
            "text",
            "raters",
            "pairs_with_2plus",
            "percent",
            "fleiss",
            "alpha",
        ]
        raters, pairs, percent, fleiss, alpha = HAND_QUERIES[row["qid"]]
        assert (row["raters"], row["pairs_with_2plus"]) == (raters, pairs)
        assert row["percent"] == pytest.approx(percent)
        assert row["fleiss"] == pytest.approx(fleiss)
        assert row["alpha"] == pytest.approx(alpha)
    sorted_ = runner.invoke(args=["agreement", "Team set", "--per-query", "--sort", "alpha"])
    assert sorted_.output.index("\n  q2 ") < sorted_.output.index("\n  q1 ")
