"""Live retriever endpoints at their edges: odd queries, odd answers, redirects, cancelling."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query
from tests.factory import build_test_set

Answer = Callable[[Request], Response]


class Programmable:
    """A search service on 127.0.0.1 whose answer a test sets; it records every request."""

    def __init__(self) -> None:
        self.seen: list[Request] = []
        self.bodies: list[Any] = []
        self.answer: Answer = lambda _request: Response("[]", content_type="application/json")
        self.server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def app(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        self.bodies.append(request.get_data(as_text=True))
        self.seen.append(request)
        return self.answer(request)(environ, start_response)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def hits(*items: dict[str, Any]) -> Answer:
    """An answer in the 'list' preset's shape."""
    return lambda _request: Response(json.dumps(list(items)), content_type="application/json")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Programmable]:
    monkeypatch.setattr("ndcg_labeler.services.endpoints.client.BACKOFF", 0.01)
    server = Programmable()
    yield server
    server.stop()


def odd_set(name: str, qid: str = "q1") -> None:
    """A test set whose one query has ODD as its text (set directly: no file format holds it)."""
    build_test_set(name, {qid: "placeholder"})
    db.session.execute(sa.update(Query).values(text=ODD))
    db.session.commit()


def add(runner: FlaskCliRunner, test_set: str, name: str, *extra: str) -> None:
    result = runner.invoke(args=["endpoints", "add", test_set, name, *extra])
    assert result.exit_code == 0, result.output


ODD = 'say "hi" \\ back\nnew line – ünïcødé 🙂 {k} {qid} </script>'


def test_a_post_body_carries_odd_query_text_exactly(
    app: Flask, runner: FlaskCliRunner, fake: Programmable
) -> None:
    with app.app_context():
        odd_set("odd")
    body = app.instance_path + "/body.json"
    with open(body, "w", encoding="utf-8") as out:
        out.write('{"q": "{query}", "id": "{qid}", "size": {k}}')
    add(runner, "odd", "post", "--url", fake.url + "/r", "--method", "POST", "--body", body,
        "--preset", "list")  # fmt: skip
    fake.answer = hits({"id": "d1", "score": 1.0})
    result = runner.invoke(args=["endpoints", "fetch", "odd", "post", "--run", "r", "--k", "7"])
    assert result.exit_code == 0, result.output
    assert json.loads(fake.bodies[-1]) == {"q": ODD, "id": "q1", "size": 7}
    tried = runner.invoke(args=["endpoints", "try", "odd", "post", ODD, "--json"])
    assert tried.exit_code == 0, tried.output
    assert json.loads(fake.bodies[-1])["q"] == ODD


def test_a_get_url_carries_odd_query_text_exactly(
    app: Flask, runner: FlaskCliRunner, fake: Programmable
) -> None:
    with app.app_context():
        odd_set("oddget", "q1/&#")
    add(
        runner,
        "oddget",
        "get",
        "--url",
        fake.url + "/r?q={query}&id={qid}&n={k}",
        "--preset",
        "list",
    )
    fake.answer = hits({"id": "d1", "score": 1.0})
    result = runner.invoke(args=["endpoints", "fetch", "oddget", "get", "--run", "r", "--k", "5"])
    assert result.exit_code == 0, result.output
    assert fake.seen[-1].args.to_dict() == {"q": ODD, "id": "q1/&#", "n": "5"}
