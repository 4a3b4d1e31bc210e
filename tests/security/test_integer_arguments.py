"""Every integer argument a page, form or API call reads, fed what a visitor may type.

`str.isdigit()` takes '²' and `int()` refuses it; a number past the database's integers
overflows the query. Neither may end in a 500: a malformed number is a 400 that names the
argument, except where a page documents leniency (a ?page= past the end shows the last page,
tests/web/test_paging.py).
"""

from __future__ import annotations

import html
import io
from dataclasses import dataclass, field

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run
from tests.factory import PASSWORD, trec
from tests.security.world import World, make_world

HUGE = "9" * 30
VALUES = ("²", "abc", "-1", HUGE)


@dataclass(frozen=True)
class Arg:
    """One integer argument: where it is sent, what else the request needs."""

    method: str
    url: str
    name: str
    others: dict[str, object] = field(default_factory=dict)
    api: bool = False
    strict: bool = True  # '²' and 'abc' are a 400 that names the argument (else: just no 500)
    json: bool = False


def _args(world: World, second_run: int) -> list[Arg]:
    a = world.sets["A"]
    ts, run, query, pair = a.test_set_id, a.run_id, a.query_id, a.pair_id
    both = {"run": [run, second_run]}
    dash = f"/test-sets/{ts}/dashboard"
    drill = f"{dash}/runs/{run}/queries/{query}"
    api = f"/api/testsets/{ts}"
    return [
        Arg("GET", f"/test-sets/{ts}/runs/", "page"),
        Arg("GET", f"/test-sets/{ts}/runs/{run}", "k"),
        Arg("GET", f"/test-sets/{ts}/series/nightly", "k"),
        Arg("GET", f"/test-sets/{ts}/series/nightly/json", "k"),
        Arg("GET", f"/test-sets/{ts}/policies", "k"),
        Arg("GET", f"{dash}/", "k"),
        Arg("GET", f"{dash}/runs/{run}", "k"),
        Arg("GET", f"{dash}/runs/{run}", "page"),
        Arg("GET", f"{drill}/", "k"),
        Arg("GET", f"{dash}/compare/", "run"),
        Arg("GET", f"{dash}/compare/", "k", both),
        Arg("GET", f"{dash}/compare/", "page", both),
        Arg("GET", f"{dash}/export/compare-next.json", "depth", both),
        Arg("GET", f"{dash}/gate/", "baseline", {"candidate": run}),
        Arg("GET", f"{dash}/gate/", "candidate", {"baseline": run}),
        Arg("GET", f"{dash}/gate/gate.md", "candidate", {"baseline": run}),
        Arg("GET", f"{dash}/gate/gate.xml", "baseline", {"candidate": second_run}),
        Arg("GET", f"{dash}/export/runs/{run}/trec_eval.txt", "k"),
        Arg("GET", f"{dash}/pool/", "depth"),
        Arg("GET", f"{dash}/pool/", "run"),
        Arg("GET", f"/test-sets/{ts}/label/upcoming.json", "n"),
        Arg("GET", f"/test-sets/{ts}/label/upcoming.json", "query"),
        Arg("GET", f"/test-sets/{ts}/label/upcoming.json", "exclude", strict=False),
        Arg("GET", f"/test-sets/{ts}/label/{pair}", "conflict"),
        Arg("GET", f"/test-sets/{ts}/queries", "page"),
        Arg("POST", f"/test-sets/{ts}/label/{pair}", "version", {"grade": 1}),
        Arg("POST", f"/test-sets/{ts}/label/{pair}", "active_ms", {"grade": 1}, strict=False),
        Arg("POST", f"/test-sets/{ts}/label/{pair}/save.json", "version", {"grade": 1}),
        Arg("POST", f"{drill}/grade", "chunk_id", {"grade": 1}),
        Arg("POST", f"{drill}/grade", "grade", {"chunk_id": a.chunk_id}),
        Arg("POST", f"{drill}/grade", "version", {"chunk_id": a.chunk_id, "grade": 1}),
        Arg("POST", f"{dash}/compare/fuse", "run"),
        Arg("POST", f"{dash}/compare/fuse", "k", both),
        Arg("POST", f"{dash}/pool/", "depth", {"run": [run]}),
        Arg("POST", f"/test-sets/{ts}/runs/{run}/archive", "keep"),
        Arg("POST", f"/test-sets/{ts}/runs/bm25", "depth"),
        Arg("GET", "/api/jobs/{value}", "job_id", api=True),
        Arg("GET", f"{api}/judges/{{value}}/audit", "judge", api=True),
        Arg("GET", f"{api}/runs", "page", api=True),
        Arg("GET", f"{api}/runs", "per_page", api=True),
        Arg("GET", f"{api}/next-labels", "depth", {"a": "one", "b": "two"}, api=True),
        Arg("GET", f"{api}/compare", "k", {"a": "one", "b": "two"}, api=True),
        Arg("GET", f"{api}/runs/one/scores", "k", api=True),
        Arg("POST", f"{api}/runs", "depth", {"name": "up"}, api=True),
        Arg("POST", f"{api}/judges/{world.judge_id}/audit", "queries", api=True),
        Arg("POST", f"{api}/judges/{world.judge_id}/audit", "queries", api=True, json=True),
        Arg("POST", f"{api}/runs/one/archive", "keep", api=True, json=True),
    ]


@pytest.fixture
def walk(app: Flask) -> tuple[World, list[Arg], FlaskClient]:
    """The world of the authorization matrix, its integer arguments and an admin's client."""
    world = make_world(app)
    with app.app_context():
        second = db.session.scalar(
            db.select(Run.id).where(
                Run.test_set_id == world.sets["A"].test_set_id, Run.name == "two"
            )
        )
    client = app.test_client()
    assert client.post("/login", data={"username": "admin", "password": PASSWORD}).status_code
    return world, _args(world, second), client


def _said(response: TestResponse) -> str:
    """What the answer says: a JSON error's detail, or the page's text."""
    if response.is_json:
        body = response.get_json()
        return str(body.get("detail") or body.get("error")) if isinstance(body, dict) else ""
    return html.unescape(response.get_data(as_text=True))


def _send(client: FlaskClient, world: World, arg: Arg, value: str) -> tuple[int, str]:
    """(status, what it says) of the request with `value` for the argument; a form's redirect
    is followed, and answers 400 here when the page it leads to flashes a refusal."""
    if "{value}" in arg.url:
        url, data = arg.url.replace("{value}", value), dict(arg.others)
    else:
        url, data = arg.url, {**arg.others, arg.name: value}
    headers = {"Authorization": f"Bearer {world.tokens['admin']}"} if arg.api else {}
    if arg.method == "GET":
        response = client.get(url, query_string=data, headers=headers)
    elif arg.json:
        # A JSON number where the API reads JSON: the same digits, or the text when not one.
        digits = value.lstrip("-")
        number: object = int(value) if digits.isascii() and digits.isdigit() else value
        response = client.post(url, json={**data, arg.name: number}, headers=headers)
    else:
        if arg.url.endswith("/runs") and arg.api:
            data["file"] = (io.BytesIO(trec({"q1": ["d1"]})), "up.trec")
        response = client.post(url, data=data, headers=headers, follow_redirects=True)
        if response.history and 'class="flash flash-error' in response.get_data(as_text=True):
            return 400, _said(response)
    return response.status_code, _said(response)


@pytest.mark.parametrize("value", VALUES, ids=["superscript", "letters", "negative", "huge"])
def test_no_integer_argument_ends_in_a_500(walk, value: str) -> None:
    world, args, client = walk
    failed = []
    for arg in args:
        try:
            status, body = _send(client, world, arg, value)
        except Exception as exc:  # the test app propagates what would be a 500
            status, body = 500, repr(exc)
        if status >= 500:
            failed.append(f"{arg.method} {arg.url} {arg.name}={value}: {status} {body[:80]}")
        elif arg.strict and value in ("²", "abc") and "{value}" not in arg.url:
            # A page names the argument in a sentence; an API error is the sentence alone.
            said = arg.name in body if arg.api else f"{arg.name} must be" in body
            if status != 400 or not said:
                failed.append(f"{arg.method} {arg.url} {arg.name}={value}: {status} {body[:80]}")
    assert failed == [], "\n".join(failed)
