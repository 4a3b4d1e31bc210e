"""Live retriever endpoints at their edges: odd queries, odd answers, redirects, cancelling."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Query, RetrieverEndpoint, Run
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services import testsets
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


@pytest.fixture
def listed(app: Flask, runner: FlaskCliRunner, fake: Programmable) -> str:
    """Test set 'ls' (q1, q2) with endpoint 'e': GET, the 'list' preset with text."""
    with app.app_context():
        build_test_set("ls", {"q1": "refund policy", "q2": "parking"}, corpus={"d1": "Refunds."})
    add(runner, "ls", "e", "--url", fake.url + "/s?q={query}&n={k}", "--preset", "list",
        "--text-field", "text")  # fmt: skip
    return "ls"


def runs_stored(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(sa.select(sa.func.count()).select_from(Run)) or 0


def test_odd_answers_are_refused_with_the_hit_named(
    app: Flask, runner: FlaskCliRunner, fake: Programmable, listed: str
) -> None:
    cases = [
        (lambda _r: Response('{"id": "d1"}'), "the hits expression '@' gave dict, not a list"),
        (hits({"id": "d1", "score": "1.5"}), "hit 1: the score expression 'score' gave '1.5'"),
        (lambda _r: Response('[{"id": "d1", "score": NaN}]'), "hit 1: the score is not a finite"),
        (hits({"id": ["d1"], "score": 1}), "hit 1: the id expression 'id' gave no docid"),
    ]
    for answer, message in cases:
        fake.answer = answer
        tried = runner.invoke(args=["endpoints", "try", "ls", "e", "x"])
        assert tried.exit_code == 1 and message in tried.output, tried.output
        fetched = runner.invoke(args=["endpoints", "fetch", "ls", "e", "--run", "r"])
        assert fetched.exit_code == 1 and message in fetched.output, fetched.output
        assert "Traceback" not in fetched.output
    assert runs_stored(app) == 0


def test_try_shows_what_a_fetch_would_store(
    app: Flask, runner: FlaskCliRunner, fake: Programmable, listed: str
) -> None:
    # d1 twice (the first one counts, as in the stored run), and more hits than asked for.
    fake.answer = hits(
        {"id": "d1", "score": 3.0}, {"id": "d2", "score": 2.0}, {"id": "d1", "score": 1.5},
        {"id": "d3", "score": 1.0},
    )  # fmt: skip
    tried = runner.invoke(args=["endpoints", "try", "ls", "e", "x", "--k", "2", "--json"])
    assert tried.exit_code == 0, tried.output
    assert [h["docid"] for h in json.loads(tried.output)] == ["d1", "d2"]
    fetched = runner.invoke(args=["endpoints", "fetch", "ls", "e", "--run", "r", "--k", "2"])
    assert fetched.exit_code == 0, fetched.output
    with app.app_context():
        run = run_service.require_run(testsets.require_by_name("ls"), "r")
        assert run_service.ranked_lists(run) == {"q1": [("d1", 3.0), ("d2", 2.0)]} | {
            "q2": [("d1", 3.0), ("d2", 2.0)]
        }


def test_k_outside_the_range_is_refused_before_asking(
    runner: FlaskCliRunner, fake: Programmable, listed: str
) -> None:
    for k in ("0", "-3"):
        tried = runner.invoke(args=["endpoints", "try", "ls", "e", "x", "--k", k])
        assert tried.exit_code == 1 and "k must be a whole number from 1" in tried.output
        fetched = runner.invoke(args=["endpoints", "fetch", "ls", "e", "--run", "r", "--k", k])
        assert fetched.exit_code == 1 and "k must be a whole number from 1" in fetched.output
    assert fake.seen == []


def test_a_header_from_an_unset_variable_is_named(
    app: Flask, runner: FlaskCliRunner, fake: Programmable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MISSING_API_KEY", raising=False)
    with app.app_context():
        build_test_set("hd", {"q1": "refund policy"})
    add(runner, "hd", "e", "--url", fake.url + "/s?q={query}", "--preset", "list",
        "--header", "X-Key: ${MISSING_API_KEY}")  # fmt: skip
    message = "the environment variable MISSING_API_KEY is not set"
    tried = runner.invoke(args=["endpoints", "try", "hd", "e", "x"])
    assert tried.exit_code == 1 and message in tried.output, tried.output
    fetch = ["endpoints", "fetch", "hd", "e", "--run", "r", "--accept-partial"]
    fetched = runner.invoke(args=fetch)
    assert fetched.exit_code == 1 and message in fetched.output, fetched.output
    assert fake.seen == [] and runs_stored(app) == 0


def test_a_docid_with_whitespace_is_a_mapping_error(
    app: Flask, runner: FlaskCliRunner, fake: Programmable, listed: str
) -> None:
    # No docid may hold whitespace (an uploaded run's or corpus's neither): the hit is refused.
    fake.answer = hits({"id": "d1", "score": 2.0}, {"id": "doc one", "score": 1.0, "text": "A."})
    fetched = runner.invoke(args=["endpoints", "fetch", "ls", "e", "--run", "r"])
    assert fetched.exit_code == 1
    assert "hit 2: the docid 'doc one' contains whitespace" in fetched.output, fetched.output
    assert runs_stored(app) == 0
    # Whitespace around a docid is not part of it, as in an uploaded file.
    fake.answer = hits({"id": " d1\t", "score": 2.0})
    tried = runner.invoke(args=["endpoints", "try", "ls", "e", "x", "--json"])
    assert [h["docid"] for h in json.loads(tried.output)] == ["d1"]


def test_a_run_whose_new_chunks_fail_to_import_is_not_stored(
    app: Flask, runner: FlaskCliRunner, fake: Programmable, listed: str
) -> None:
    # The run's file fits the size limit; the corpus of its long new chunk does not.
    app.config["NDCG_MAX_DECOMPRESSED_BYTES"] = 120
    fake.answer = hits({"id": "d9", "score": 2.0, "text": "long " * 40})
    fetched = runner.invoke(args=["endpoints", "fetch", "ls", "e", "--run", "r"])
    assert fetched.exit_code == 1 and "so nothing was stored" in fetched.output, fetched.output
    assert runs_stored(app) == 0
    with app.app_context():
        docids = db.session.scalars(sa.select(Chunk.docid)).all()
    assert docids == ["d1"]
    again = runner.invoke(args=["endpoints", "fetch", "ls", "e", "--run", "r"])
    assert "already has a run named" not in again.output, again.output


def test_a_redirect_is_not_followed_and_says_so(
    app: Flask, runner: FlaskCliRunner, fake: Programmable, listed: str
) -> None:
    elsewhere = Programmable()
    try:
        target = elsewhere.url.replace("127.0.0.1", "localhost") + "/s"
        fake.answer = lambda _r: Response("", status=302, headers={"Location": target})
        tried = runner.invoke(args=["endpoints", "try", "ls", "e", "x"])
        assert tried.exit_code == 1
        assert "HTTP 302" in tried.output and "redirect" in tried.output, tried.output
        fetched = runner.invoke(args=["endpoints", "fetch", "ls", "e", "--run", "r"])
        assert fetched.exit_code == 1 and "redirect" in fetched.output, fetched.output
        assert elsewhere.seen == [] and runs_stored(app) == 0
    finally:
        elsewhere.stop()


def test_a_cancelled_fetch_stops_asking(
    app: Flask, runner: FlaskCliRunner, fake: Programmable
) -> None:
    from ndcg_labeler.services import endpoints
    from ndcg_labeler.services._progress import Cancelled

    with app.app_context():
        build_test_set("slow", {f"q{n}": f"query {n}" for n in range(12)})
    add(runner, "slow", "e", "--url", fake.url + "/s?q={query}", "--preset", "list",
        "--concurrency", "1")  # fmt: skip

    def slow(_request: Request) -> Response:
        time.sleep(0.5)
        return Response('[{"id": "d1", "score": 1}]', content_type="application/json")

    def cancel_at_once(*_report: Any) -> None:
        raise Cancelled()

    fake.answer = slow
    with app.app_context():
        test_set = testsets.require_by_name("slow")
        endpoint = endpoints.require_endpoint(test_set, "e")
        started = time.monotonic()
        with pytest.raises(Cancelled):
            endpoints.fetch_run(test_set, endpoint, "r", progress=cancel_at_once)
        took = time.monotonic() - started
    # Twelve queries one at a time would take 6 s; a cancel stops at the query being asked.
    assert len(fake.seen) <= 2 and took < 3.0, (len(fake.seen), took)
    assert runs_stored(app) == 0


def test_the_pages_say_what_went_wrong(
    app: Flask, as_admin: Any, fake: Programmable, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ndcg_labeler.services.jobs.runner import run_job

    monkeypatch.delenv("MISSING_API_KEY", raising=False)
    with app.app_context():
        ts_id = build_test_set("pages", {"q1": "refund policy", "q2": "parking"}).id
    base = f"/test-sets/{ts_id}/endpoints/"
    form = {"name": "p", "url": fake.url + "/s", "method": "POST", "preset": "list"}
    for body, message in [
        ("", "a POST endpoint needs a JSON body template"),
        ('{"q": {query}}', "the body template is not JSON once filled in"),
        ('{"q": "{query}"', "the body template is not JSON once filled in"),
    ]:
        page = as_admin.post(base, data={**form, "body": body})
        assert page.status_code == 200 and message in page.get_data(as_text=True), body
    added = as_admin.post(
        base, data={**form, "body": '{"q": "{query}"}', "headers": "X-Key: ${MISSING_API_KEY}"}
    )
    assert added.status_code == 302
    tried = as_admin.post(
        base + "p", data={"try-query": 'a "quoted" \\ query', "try-submit": "Try"}
    )
    assert tried.status_code == 200
    assert "the environment variable MISSING_API_KEY is not set" in tried.get_data(as_text=True)
    fetch = as_admin.post(
        base + "p",
        data={"fetch-run": "r", "fetch-k": "10", "fetch-accept_partial": "y", "fetch-submit": "1"},
    )
    assert fetch.status_code == 302, fetch.get_data(as_text=True)
    job_id = int(fetch.headers["Location"].rsplit("/", 1)[1])
    with app.app_context():
        run_job(job_id)
    shown = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "the environment variable MISSING_API_KEY is not set" in shown
    assert runs_stored(app) == 0 and fake.seen == []
    zero = as_admin.post(base + "p", data={"fetch-run": "r", "fetch-k": "0", "fetch-submit": "1"})
    assert zero.status_code == 200 and "Number must be" in zero.get_data(as_text=True)


def test_trying_a_slow_endpoint_asks_once(
    app: Flask, runner: FlaskCliRunner, fake: Programmable
) -> None:
    # A page waits for its Try: with a fetch's retries, the default 30 s timeout would hold it
    # for over two minutes, past gunicorn's 120 s (make serve), which kills the worker.
    with app.app_context():
        build_test_set("tryslow", {"q1": "x"})
    add(runner, "tryslow", "e", "--url", fake.url + "/s?q={query}", "--preset", "list",
        "--timeout", "1")  # fmt: skip

    def slow(_request: Request) -> Response:
        time.sleep(2.5)
        return Response("[]", content_type="application/json")

    fake.answer = slow
    started = time.monotonic()
    tried = runner.invoke(args=["endpoints", "try", "tryslow", "e", "x"])
    assert tried.exit_code == 1 and "no answer from" in tried.output, tried.output
    assert len(fake.seen) == 1 and time.monotonic() - started < 2.4


def test_a_header_secret_with_a_line_break_is_refused(
    app: Flask, runner: FlaskCliRunner, fake: Programmable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BROKEN_API_KEY", "abc\r\nX-Injected: 1")
    with app.app_context():
        build_test_set("crlf", {"q1": "x"})
    add(runner, "crlf", "e", "--url", fake.url + "/s?q={query}", "--preset", "list",
        "--header", "X-Key: ${BROKEN_API_KEY}")  # fmt: skip
    for args in (["try", "crlf", "e", "x"], ["fetch", "crlf", "e", "--run", "r"]):
        result = runner.invoke(args=["endpoints", *args])
        assert result.exit_code == 1, result.output
        assert "BROKEN_API_KEY" in result.output and "line break" in result.output, result.output
    assert fake.seen == []


def test_a_body_template_that_is_not_utf8_is_refused(
    app: Flask, runner: FlaskCliRunner, tmp_path: Path
) -> None:
    with app.app_context():
        build_test_set("latin", {"q1": "x"})
    body = tmp_path / "body.json"
    body.write_bytes('{"q": "{query}", "lang": "français"}'.encode("latin-1"))
    args = ["endpoints", "add", "latin", "e", "--url", "http://127.0.0.1:9/s", "--method", "POST"]
    result = runner.invoke(args=[*args, "--body", str(body), "--preset", "list"])
    assert result.exit_code == 1 and result.output.startswith("Error:"), repr(result.exception)
    assert f"{body} is not UTF-8 text" in result.output


def test_a_partial_fetch_from_the_browser_lists_what_it_left_out(
    app: Flask, as_admin: Any, fake: Programmable
) -> None:
    from ndcg_labeler.services.jobs.runner import run_job

    with app.app_context():
        ts_id = build_test_set("partial", {"q1": "fine", "q2": "broken"}).id
    base = f"/test-sets/{ts_id}/endpoints/"
    form = {"name": "p", "url": fake.url + "/s?q={query}", "method": "GET", "preset": "list"}
    assert as_admin.post(base, data=form).status_code == 302

    def answer(request: Request) -> Response:
        if request.args["q"] == "broken":
            return Response("no", status=404)
        return Response('[{"id": "d1", "score": 1}]', content_type="application/json")

    fake.answer = answer
    for partial, stored in (({}, 0), ({"fetch-accept_partial": "y"}, 1)):
        data = {"fetch-run": "r", "fetch-k": "10", "fetch-submit": "1", **partial}
        fetch = as_admin.post(base + "p", data=data)
        job_id = int(fetch.headers["Location"].rsplit("/", 1)[1])
        with app.app_context():
            run_job(job_id)
        shown = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
        assert "q2" in shown and "HTTP 404 NOT FOUND" in shown, shown
        assert runs_stored(app) == stored


def test_a_url_or_expression_past_its_column_is_refused(app: Flask, runner: FlaskCliRunner) -> None:
    with app.app_context():
        build_test_set("long", {"q1": "x"})
    url = "http://127.0.0.1:9/s?q={query}&pad=" + "a" * 2000
    result = runner.invoke(args=["endpoints", "add", "long", "e", "--url", url, "--preset", "list"])
    assert result.exit_code == 1, repr(result.exception)
    assert "the URL must be at most 2000 characters, not 2035" in result.output
    hits_expr = "hits" + "[0]" * 166  # 502 characters, a valid JMESPath expression
    args = ["--url", "http://127.0.0.1:9/s?q={query}", "--hits", hits_expr, "--id", "id"]
    result = runner.invoke(args=["endpoints", "add", "long", "e", *args])
    assert result.exit_code == 1, repr(result.exception)
    assert "the hits expression must be at most 500 characters, not 502" in result.output
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(RetrieverEndpoint)) == 0
