"""The API's next-labels reads depth and k as the compare page and `flask pool` do.

The page's list is its top k (depth = k, at most the pool's 1,000); `flask pool --for-compare
--depth D` without --k runs the flip test at k = D below 10. Before, the API took each alone
with a default of 10 for the other: `?k=3` listed the top 10 beside a flip test at NDCG@3, a
list the page at k = 3 never shows.
"""

from __future__ import annotations

import html
import json
import re

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services.accounts import create_token
from tests.factory import Demo


def _api(app: Flask, client: FlaskClient, admin_id: int, dash: Demo, query: str):  # type: ignore[no-untyped-def]
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
    url = f"/api/testsets/{dash.test_set_id}/next-labels?a=A&b=B&{query}"
    return client.get(url, headers={"Authorization": f"Bearer {token}"})


def test_k_alone_lists_the_pages_top_k(
    app: Flask, as_admin: FlaskClient, admin_id: int, dash: Demo
) -> None:
    page = as_admin.get(
        f"/test-sets/{dash.test_set_id}/dashboard/compare/"
        f"?run={dash.run_a}&run={dash.run_b}&k=3&stats=1"
    ).get_data(as_text=True)
    caption = re.search(r"Unjudged pairs in the top (\d+) .*? of (\d+)\)</caption>", page)
    assert caption is not None, page
    body = _api(app, as_admin, admin_id, dash, "k=3").get_json()
    assert (body["depth"], body["k"]) == (3, 3)
    assert (str(body["depth"]), str(body["unjudged_pairs"])) == caption.groups()
    assert html.unescape(page).count(f"--depth {body['depth']} --json") == 1


def test_depth_alone_sets_k_as_flask_pool_does(
    app: Flask, client: FlaskClient, admin_id: int, dash: Demo, runner: FlaskCliRunner
) -> None:
    body = _api(app, client, admin_id, dash, "depth=3").get_json()
    assert (body["depth"], body["k"]) == (3, 3)
    cli = runner.invoke(args=["pool", "dash", "--for-compare", "A", "B", "--depth", "3", "--json"])
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.stdout) == body["pairs"] and "flip test is at k = 3" in cli.stderr
    deeper = _api(app, client, admin_id, dash, "depth=12").get_json()
    assert (deeper["depth"], deeper["k"]) == (12, 10)  # a deeper list: the default NDCG@10
    neither = _api(app, client, admin_id, dash, "").get_json()
    assert (neither["depth"], neither["k"]) == (10, 10)
    both = _api(app, client, admin_id, dash, "depth=4&k=3").get_json()
    assert (both["depth"], both["k"]) == (4, 3)
    past = _api(app, client, admin_id, dash, "k=2000").get_json()
    assert (past["depth"], past["k"]) == (1000, 2000)  # the page's list too stops at 1,000


def test_flask_pool_takes_k_alone_or_neither_as_the_api_does(
    app: Flask, client: FlaskClient, admin_id: int, dash: Demo, runner: FlaskCliRunner
) -> None:
    for args, query in (
        (["--k", "3"], "k=3"),
        ([], ""),
    ):
        cli = runner.invoke(args=["pool", "dash", "--for-compare", "A", "B", *args, "--json"])
        assert cli.exit_code == 0, cli.output
        assert (
            json.loads(cli.stdout) == _api(app, client, admin_id, dash, query).get_json()["pairs"]
        )
    # Plain pooling still needs its depth.
    plain = runner.invoke(args=["pool", "dash"])
    assert plain.exit_code == 2 and "Missing option '--depth'" in plain.output


def test_refusals_name_the_argument(
    app: Flask, client: FlaskClient, admin_id: int, dash: Demo
) -> None:
    for query, detail in (
        ("depth=0", "depth must be a whole number from 1 to 1000, not '0'"),
        ("depth=x&k=3", "depth must be a whole number from 1 to 1000, not 'x'"),
        ("k=0", "k must be a whole number from 1 to 100000, not '0'"),
        ("k=x&depth=3", "k must be a whole number from 1 to 100000, not 'x'"),
    ):
        answer = _api(app, client, admin_id, dash, query)
        assert answer.status_code == 400, query
        assert answer.get_json()["detail"] == detail, query


def test_the_openapi_document_says_the_defaults(client: FlaskClient) -> None:
    spec = client.get("/api/openapi.json").get_json()
    found = spec["paths"]["/api/testsets/{test_set}/next-labels"]["get"]["parameters"]
    params = {p["name"]: p for p in found}
    assert "default" not in params["depth"]["schema"] and "default" not in params["k"]["schema"]
    assert "Default: k (at most 1000)" in params["depth"]["description"]
    assert "Default: the depth when it is below 10" in params["k"]["description"]
