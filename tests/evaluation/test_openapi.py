"""The OpenAPI document: valid 3.1, complete (every /api route), and true to the app
(schemathesis, a few generated requests per operation, in-process through WSGI)."""

from __future__ import annotations

import inspect
import io
import re
import sys

import pytest
import schemathesis
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, Phase, given, settings
from openapi_spec_validator import validate
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import judges
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.accounts import create_token
from ndcg_labeler.services.jobs.records import create_job
from tests.factory import build_test_set, make_user, trec

METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}


def test_the_document_is_valid_openapi_3_1(client: FlaskClient) -> None:
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    spec = response.get_json()
    assert spec["openapi"] == "3.1.0"
    validate(spec)


def test_every_api_route_is_documented(app: Flask, client: FlaskClient) -> None:
    spec = client.get("/api/openapi.json").get_json()
    documented = {
        (path, method.upper())
        for path, item in spec["paths"].items()
        for method in item
        if method != "parameters"
    }
    routes = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/"):
            continue
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        routes |= {(path, method) for method in rule.methods & METHODS}
    assert routes, "no /api route found"
    assert routes - documented == set(), "routes missing from the OpenAPI document"
    assert documented - routes == set(), "documented operations the app does not have"


def test_the_reference_page_lists_every_operation(client: FlaskClient) -> None:
    page = client.get("/api/docs").get_data(as_text=True)
    spec = client.get("/api/openapi.json").get_json()
    for path, item in spec["paths"].items():
        for method in item:
            if method != "parameters":
                assert f"{method.upper()} {path}" in page


def _seed(app: Flask) -> str:
    """An admin with a token, test set 'demo' with runs 'A' and 'B' of series 'nightly' (the
    document's examples) and 'retired-run' (archived by its example)."""
    admin = make_user(app, "admin", "admin")
    with app.app_context():
        test_set = build_test_set(
            "demo", {"q1": "one", "q2": "two", "q3": "three"}, [("q1", "a", 2), ("q2", "b", 1)]
        )
        run_a = {"q1": ["a", "b"], "q2": ["b", "a"], "q3": ["c"]}
        run_b = {"q1": ["b", "a"], "q2": ["a", "b"], "q3": ["a"]}
        # A and B are the series example's "nightly".
        for name, ranked in (("A", run_a), ("B", run_b)):
            stream = io.BytesIO(trec(ranked))
            run_service.upload_run(test_set, stream, f"{name}.trec", name, None, series="nightly")
        # The archive example's run: one no generated request names, deeper than the example's
        # keep of 10 (a keep that would drop nothing is refused).
        deep = {"q1": ["a", "b", *(f"d{n}" for n in range(10))]}
        run_service.upload_run(test_set, io.BytesIO(trec(deep)), "r.trec", "retired-run", None)
        judges.add_judge("gpt", "http://127.0.0.1:9/v1", "none")  # the audit routes' example
        create_job("import", test_set.id, admin, {})  # job 1, the jobs route's example
        create_job("import", test_set.id, admin, {})  # job 2, the cancel route's example
        token = create_token(db.session.get(User, admin))
        db.session.remove()
        return token


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_and_no_schema_violation(app: Flask) -> None:
    token = _seed(app)
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", app)
    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
    ]
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 5
    seen: list[tuple[str, int]] = []
    for operation in operations:

        @settings(
            max_examples=8,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def check(case: schemathesis.Case) -> None:
            with app.app_context():
                response = case.call_and_validate(
                    headers={"Authorization": f"Bearer {token}"}, checks=checks
                )
                seen.append((case.operation.label, response.status_code))
                db.session.remove()

        check()
    # And one known-good request per operation, so every success schema is checked too.
    good = {
        "GET /api/testsets": {},
        "GET /api/testsets/{test_set}/qrels": {"path_parameters": {"test_set": "demo"}},
        "POST /api/testsets/{test_set}/import": {
            "path_parameters": {"test_set": "demo"},
            "body": {"queries": b"q-new\tprinter toner\n"},
            "media_type": "multipart/form-data",
        },
        "GET /api/testsets/{test_set}/runs": {"path_parameters": {"test_set": "demo"}},
        "GET /api/testsets/{test_set}/export": {
            "path_parameters": {"test_set": "demo"},
            "query": {"format": "srw-judgments"},
        },
        "GET /api/testsets/{test_set}/runs/{run}/export": {
            "path_parameters": {"test_set": "demo", "run": "A"}
        },
        "GET /api/testsets/{test_set}/status": {"path_parameters": {"test_set": "demo"}},
        "GET /api/testsets/{test_set}/runs/{run}/scores": {
            "path_parameters": {"test_set": "demo", "run": "A"},
            "query": {"k": 3, "measure": ["nDCG@3", "bpref", "P(rel=2)@1"]},
        },
        "GET /api/testsets/{test_set}/compare": {
            "path_parameters": {"test_set": "demo"},
            "query": {"a": "A", "b": "B", "k": 3, "measure": ["AP", "Success@2"]},
        },
        "GET /api/testsets/{test_set}/next-labels": {
            "path_parameters": {"test_set": "demo"},
            "query": {"a": "A", "b": "B", "depth": 2, "k": 2},
        },
        "POST /api/testsets/{test_set}/gate": {
            "path_parameters": {"test_set": "demo"},
            "body": {"baseline": "A", "candidate": "B", "measure": ["ndcg_cut_3", "map", "bpref"]},
            "media_type": "application/json",
        },
        "POST /api/testsets/{test_set}/runs": {
            "path_parameters": {"test_set": "demo"},
            "body": {"file": trec({"q1": ["b"]}), "name": "C"},
            "media_type": "multipart/form-data",
        },
        "GET /api/testsets/{test_set}/judges/{judge}/audit": {
            "path_parameters": {"test_set": "demo", "judge": "gpt"}
        },
        "POST /api/testsets/{test_set}/judges/{judge}/audit": {
            "path_parameters": {"test_set": "demo", "judge": "gpt"},
            "body": {"queries": 3, "seed": 1, "reseed": True},
            "media_type": "application/json",
        },
        "POST /api/judges/{judge}/settings": {
            "path_parameters": {"judge": "gpt"},
            "body": {"concurrency": 3, "timeout": "12.5"},
            "media_type": "application/json",
        },
        "GET /api/testsets/{test_set}/series": {"path_parameters": {"test_set": "demo"}},
        "GET /api/testsets/{test_set}/series/{name}": {
            "path_parameters": {"test_set": "demo", "name": "nightly"},
            "query": {"k": 3},
        },
        "GET /api/jobs/{job_id}": {"path_parameters": {"job_id": 1}},
        "POST /api/jobs/{job_id}/cancel": {"path_parameters": {"job_id": 2}},
        "POST /api/testsets/{test_set}/runs/{run}/tags": {
            "path_parameters": {"test_set": "demo", "run": "A"},
            "body": {"add": ["baseline"], "pinned": True},
            "media_type": "application/json",
        },
        "POST /api/testsets/{test_set}/runs/{run}/archive": {
            "path_parameters": {"test_set": "demo", "run": "retired-run"},
            "body": {"keep": 10},
            "media_type": "application/json",
        },
        "GET /api/openapi.json": {},
        "GET /api/docs": {},
    }
    for operation in operations:
        case = schema.make_case(operation=operation, **good[operation.label])
        with app.app_context():
            response = case.call_and_validate(
                headers={"Authorization": f"Bearer {token}"}, checks=checks
            )
            db.session.remove()
        seen.append((operation.label, response.status_code))
        assert response.status_code in (200, 201), (operation.label, response.text)
    # schemathesis leaves out the document's own URL; the other tests here cover it.
    assert {label for label, _ in seen} == set(good) - {"GET /api/openapi.json"}


def test_the_reference_page_renders_code_not_backticks(client: FlaskClient) -> None:
    page = client.get("/api/docs").get_data(as_text=True)
    assert "`" not in page
    assert "<code>Authorization: Bearer &lt;token&gt;</code>" in page
    assert "<code>flask run score</code>" in page


def test_the_scores_endpoint_documents_every_option_it_reads(client: FlaskClient) -> None:
    spec = client.get("/api/openapi.json").get_json()
    operation = spec["paths"]["/api/testsets/{test_set}/runs/{run}/scores"]["get"]
    names = [p["name"] for p in operation["parameters"]]
    assert names == ["k", "gain", "ideal", "judged_only", "aggregation", "labels", "measure"]
    scores = spec["components"]["schemas"]["Scores"]
    for key in ("labels", "aggregation", "judged_only", "mean_trec_all", "queries_trec_all"):
        assert key in scores["required"] and key in scores["properties"]
    page = client.get("/api/docs").get_data(as_text=True)
    assert "<td><code>labels</code></td>" in page and "fill:JUDGE" in page


# The operations whose 403 is a blind test set's (grades_visible), not an admin-only action.
BLIND_403 = {
    ("/api/testsets/{test_set}/qrels", "get"),
    ("/api/testsets/{test_set}/export", "get"),
    ("/api/testsets/{test_set}/runs/{run}/scores", "get"),
    ("/api/testsets/{test_set}/compare", "get"),
    ("/api/testsets/{test_set}/next-labels", "get"),
}


def test_each_403_is_described_as_what_it_is(client: FlaskClient) -> None:
    spec = client.get("/api/openapi.json").get_json()
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            forbidden = (
                operation.get("responses", {}).get("403") if method != "parameters" else None
            )
            if forbidden is None:
                continue
            text = forbidden["description"]
            if (path, method) in BLIND_403:
                assert "judged blind" in text and "only admins" not in text.lower(), (path, text)
            else:
                assert "judged blind" not in text, (path, text)


# Parameters a view reads through a shared reader rather than request.args by name.
READERS = {
    "live.parse_options(request.args)": {"k", "gain", "ideal", "judged_only", "aggregation",
                                         "labels"},
    "list_filter(request.args": {"q", "tag", "archived", "sort", "page", "per_page"},
}  # fmt: skip
# Calls that answer 404 (an unknown or hidden test set, run, judge) or 400 (a malformed body).
ANSWERS_404 = ("visible_test_set(", "run_in(", "judge_ref(")
ANSWERS_400 = ("api_params.params(", "api_params.whole(", "api_params.number(")


def _view_source(app: Flask, endpoint: str) -> str:
    """The view's source and that of the module's own helpers it calls (two levels deep)."""
    view = inspect.unwrap(app.view_functions[endpoint])
    module = sys.modules[view.__module__]
    seen: dict[str, str] = {view.__name__: inspect.getsource(view)}
    for _ in range(2):
        for text in list(seen.values()):
            for name in re.findall(r"\b(_\w+)\(", text):
                helper = getattr(module, name, None)
                if name not in seen and inspect.isfunction(helper):
                    seen[name] = inspect.getsource(helper)
    return "\n".join(seen.values())


def _api_routes(app: Flask) -> list[tuple[str, str, str]]:
    """(OpenAPI path, method, endpoint) of every /api route but the document's own."""
    out = []
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/") and rule.endpoint.startswith("api."):
            path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
            out += [(path, method.lower(), rule.endpoint) for method in rule.methods & METHODS]
    return out


def test_every_route_documents_its_parameters_and_its_error_answers(
    app: Flask, client: FlaskClient
) -> None:
    """Not only listed: each operation names every parameter its view reads and every error
    status its view (or the token check before it) can answer."""
    spec = client.get("/api/openapi.json").get_json()
    routes = _api_routes(app)
    assert len(routes) >= 19
    problems = []
    for path, method, endpoint in routes:
        item = spec["paths"].get(path, {})
        operation = item.get(method)
        if operation is None:
            problems.append(f"{method.upper()} {path}: not in the document")
            continue
        declared = [*item.get("parameters", []), *operation.get("parameters", [])]
        in_path = {p["name"] for p in declared if p["in"] == "path"}
        in_query = {p["name"] for p in declared if p["in"] == "query"}
        statuses = set(operation["responses"])
        source = _view_source(app, endpoint)
        wanted_path = set(re.findall(r"\{(\w+)\}", path))
        if in_path != wanted_path:
            problems.append(f"{method.upper()} {path}: path parameters {sorted(in_path)}")
        read = set(re.findall(r"request\.args\.get(?:list)?\(\s*\"(\w+)\"", source))
        for reader, names in READERS.items():
            if reader in source:
                read |= names
        if read - in_query:
            problems.append(
                f"{method.upper()} {path}: query {sorted(read - in_query)} undocumented"
            )
        wanted = {"401", "429"}  # the token check answers before every route
        wanted |= set(re.findall(r"error\(\s*(\d{3})", source))
        if any(call in source for call in ANSWERS_404):
            wanted.add("404")
        if any(call in source for call in ANSWERS_400):
            wanted.add("400")
        if wanted - statuses:
            problems.append(
                f"{method.upper()} {path}: answers {sorted(wanted - statuses)} undocumented"
            )
        for status in statuses - {"200", "201", "202"}:
            schema = operation["responses"][status]["content"]["application/json"]["schema"]
            if schema != {"$ref": "#/components/schemas/Error"}:
                problems.append(f"{method.upper()} {path}: {status} is not the Error object")
    assert not problems, "\n".join(problems)


def test_the_throttled_answer_says_when_to_come_back(client: FlaskClient) -> None:
    spec = client.get("/api/openapi.json").get_json()
    throttled = spec["paths"]["/api/testsets"]["get"]["responses"]["429"]
    assert throttled["headers"]["Retry-After"]["schema"] == {"type": "integer", "minimum": 0}
