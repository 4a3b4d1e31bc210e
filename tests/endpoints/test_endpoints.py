"""Live retriever endpoints, offline: recorded engine responses and a fake search server."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from ndcg_labeler.extensions import db
from ndcg_labeler.formats.hits import HitsError, Mapping, map_hits, preset
from ndcg_labeler.models import Chunk, Judgment, Run, TestSet
from ndcg_labeler.services import live, testsets
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set

ENGINES = Path(__file__).resolve().parents[1] / "data" / "engines"


@pytest.mark.parametrize(
    ("engine", "scores"),
    [
        ("elasticsearch", [1.3862942, 0.2876821]),
        ("opensearch", [1.3862942, 0.2876821]),
        ("solr", [2.5, 0.75]),
        ("vespa", [0.88, 0.12]),
        ("list", [0.91, 0.33]),
    ],
)
def test_presets_read_recorded_responses(engine: str, scores: list[float]) -> None:
    name = "elasticsearch" if engine == "opensearch" else engine
    document = json.loads((ENGINES / f"{name}.json").read_text())
    field = "text" if engine == "list" else "body"
    hits = map_hits(document, preset(engine, field))
    assert [(h.docid, h.score, h.text) for h in hits] == [
        ("d7", scores[0], "Refunds within 30 days."),
        ("d2", scores[1], "Open 9 to 5."),
    ]


def test_mapping_errors_name_the_expression_and_the_hit() -> None:
    with pytest.raises(HitsError, match=r"the hits expression 'hits\.hits' gave null"):
        map_hits({"took": 1}, preset("elasticsearch"))
    with pytest.raises(HitsError, match=r"hit 2: the id expression '_id' gave no docid"):
        map_hits({"hits": {"hits": [{"_id": "a"}, {"_score": 1}]}}, preset("elasticsearch"))
    with pytest.raises(HitsError, match="hit 1: the score expression 'score' gave 'high'"):
        map_hits([{"id": "a", "score": "high"}], Mapping("@", "id", "score"))


class FakeSearch:
    """A search service on 127.0.0.1 answering in Elasticsearch's shape, by query text."""

    ANSWERS: ClassVar[dict[str, list[dict[str, Any]]]] = {
        "refund policy": [
            {"_id": "d1", "_score": 2.0, "_source": {"body": "Refunds within 30 days."}},
            {"_id": "new1", "_score": 1.0, "_source": {"body": "A new refund chunk."}},
        ],
        "parking": [{"_id": "d5", "_score": 3.0, "_source": {"body": "Parking permits."}}],
        "no id": [{"_score": 1.0, "_source": {"body": "?"}}],
    }

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def app(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        if request.method == "POST":
            query = request.get_json()["query"]["match"]["body"]
        else:
            query = request.args.get("q", "")
        self.seen.append({"query": query, "auth": request.headers.get("Authorization")})
        if query == "broken":
            response = Response("boom", status=500)
        elif query == "garbage":
            response = Response("{not json", content_type="application/json")
        elif query == "slow":
            time.sleep(2.5)  # well past the endpoint's timeout (0.8 s) in the test that uses it
            response = Response(json.dumps({"hits": {"hits": []}}))
        else:
            hits = self.ANSWERS.get(query, [])
            response = Response(
                json.dumps({"hits": {"hits": hits}}), content_type="application/json"
            )
        return response(environ, start_response)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def search(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSearch]:
    monkeypatch.setattr("ndcg_labeler.services.endpoints.client.BACKOFF", 0.01)
    monkeypatch.setenv("SEARCH_API_TOKEN", "s3cret")
    server = FakeSearch()
    yield server
    server.stop()


QUERIES = {"q1": "refund policy", "q2": "parking", "q3": "broken", "q4": "garbage"}


@pytest.fixture
def ep_set(app: Flask, runner: FlaskCliRunner, search: FakeSearch) -> str:
    with app.app_context():
        build_test_set(
            "ep",
            QUERIES,
            [("q1", "d1", 3), ("q1", "new1", 2), ("q2", "d5", 1)],
            corpus={"d1": "Refunds within 30 days.", "d5": "Parking permits."},
        )
    added = runner.invoke(
        args=[
            "endpoints", "add", "ep", "es",
            "--url", search.url + "/search?q={query}&size={k}",
            "--header", "Authorization: Bearer ${SEARCH_API_TOKEN}",
            "--preset", "elasticsearch", "--text-field", "body",
        ]
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    return "ep"


def test_try_one_query_shows_the_mapped_results(
    runner: FlaskCliRunner, ep_set: str, search: FakeSearch
) -> None:
    result = runner.invoke(args=["endpoints", "try", "ep", "es", "refund policy", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [
        {"docid": "d1", "score": 2.0, "text": "Refunds within 30 days."},
        {"docid": "new1", "score": 1.0, "text": "A new refund chunk."},
    ]
    assert search.seen[-1]["auth"] == "Bearer s3cret"  # read from the environment when asked
    bad = runner.invoke(args=["endpoints", "try", "ep", "es", "no id"])
    assert bad.exit_code == 1 and "hit 1: the id expression '_id' gave no docid" in bad.output
    broken = runner.invoke(args=["endpoints", "try", "ep", "es", "broken"])
    assert broken.exit_code == 1 and "HTTP 500" in broken.output
    garbage = runner.invoke(args=["endpoints", "try", "ep", "es", "garbage"])
    assert garbage.exit_code == 1 and "not JSON" in garbage.output


def test_a_fetch_with_failures_stores_nothing_unless_accepted(
    app: Flask, runner: FlaskCliRunner, ep_set: str
) -> None:
    refused = runner.invoke(args=["endpoints", "fetch", "ep", "es", "--run", "live", "--json"])
    assert refused.exit_code == 1
    failed = json.loads(refused.output.splitlines()[0])
    assert set(failed) == {"run", "queries", "fetched", "failed", "new_chunks", "seconds"}
    assert (failed["queries"], failed["fetched"], failed["failed"]) == (4, 2, 2)
    assert "failed q3: HTTP 500" in refused.output and "failed q4:" in refused.output
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == 0
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Chunk)) == 3  # d1 d5 new1

    accepted = runner.invoke(
        args=["endpoints", "fetch", "ep", "es", "--run", "live", "--json", "--accept-partial"]
    )
    assert accepted.exit_code == 0, accepted.output
    report = json.loads(accepted.output.splitlines()[0])
    assert {k: report[k] for k in ("run", "queries", "fetched", "failed", "new_chunks")} == {
        "run": "live",
        "queries": 4,
        "fetched": 2,
        "failed": 2,
        "new_chunks": 0,  # new1 was named by the qrels, so the test set has it (without text)
    }
    with app.app_context():
        test_set = testsets.require_by_name("ep")
        run = run_service.require_run(test_set, "live")
        fetched = run.report["fetched"]
        assert fetched["endpoint"] == "es" and fetched["left_out"] == ["q3", "q4"]
        assert fetched["header_names"] == ["Authorization"] and "s3cret" not in json.dumps(fetched)
        scores = live.score_run(run, live.ScoreOptions(k=2))
        by_qid = dict(zip(scores.qids, scores.ndcg.tolist(), strict=True))
    # q1: d1 (3) then new1 (2): the ideal order -> 1.0; q2: d5 (1) alone -> 1.0.
    assert by_qid["q1"] == pytest.approx(1.0) and by_qid["q2"] == pytest.approx(1.0)


def test_chunks_the_test_set_lacks_join_the_corpus(
    app: Flask, runner: FlaskCliRunner, search: FakeSearch, as_admin
) -> None:
    with app.app_context():
        build_test_set("fresh", {"q1": "refund policy"}, corpus={"d1": "Refunds within 30 days."})
    body = Path(app.instance_path) / "body.json"
    body.write_text('{"query": {"match": {"body": "{query}"}}, "size": {k}}')
    args = [
        "endpoints", "add", "fresh", "post",
        "--url", search.url + "/es", "--method", "POST", "--body", str(body),
        "--hits", "hits.hits", "--id", "_id", "--score", "_score", "--text", "_source.body",
    ]  # fmt: skip
    assert runner.invoke(args=args).exit_code == 0
    result = runner.invoke(args=["endpoints", "fetch", "fresh", "post", "--run", "p", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["new_chunks"] == 1
    with app.app_context():
        chunk = db.session.scalar(sa.select(Chunk).where(Chunk.docid == "new1"))
        assert chunk is not None and chunk.text == "A new refund chunk."
        test_set_id = db.session.scalar(sa.select(TestSet.id).where(TestSet.name == "fresh"))
    # Pooling from the fetched run queues the new chunk, and it is graded like any other.
    pooled = runner.invoke(args=["pool", "fresh", "--depth", "10", "--run", "p"])
    assert pooled.exit_code == 0, pooled.output
    seen = []
    for _ in range(2):
        page = as_admin.get(f"/test-sets/{test_set_id}/label", follow_redirects=True)
        text = page.get_data(as_text=True)
        shown = re.sub(r"<[^>]+>", "", text)  # query terms are highlighted with <mark>
        seen.append("Chunk new1" in shown and "A new refund chunk." in shown)
        form = as_admin.post(page.request.path, data={"grade": "2"}, follow_redirects=False)
        assert form.status_code in (302, 303)
    assert any(seen)
    with app.app_context():
        graded = db.session.scalar(
            sa.select(Judgment.grade).join(Chunk, Chunk.id == Judgment.chunk_id)
            .where(Chunk.docid == "new1")
        )  # fmt: skip
    assert graded == 2


def test_bad_endpoints_are_refused(runner: FlaskCliRunner, ep_set: str, search: FakeSearch) -> None:
    cases = [
        (["--url", search.url + "/search", "--preset", "solr"], "needs the {query} placeholder"),
        (["--url", search.url + "/s?q={query}", "--hits", "hits[", "--id", "_id"], "not JMESPath"),
        (["--url", "ftp://x/{query}", "--preset", "list"], "http:// or https://"),
        (
            ["--url", search.url + "/s?q={query}", "--preset", "list", "--header", "oops"],
            "Name: value",
        ),
    ]
    for extra, message in cases:
        result = runner.invoke(args=["endpoints", "add", "ep", "bad", *extra])
        assert result.exit_code != 0 and message in result.output, (extra, result.output)


def test_a_fetch_is_as_deep_as_a_stored_run(runner: FlaskCliRunner, ep_set: str) -> None:
    deepest = run_service.MAX_DEPTH
    result = runner.invoke(
        args=["endpoints", "fetch", "ep", "es", "--run", "deep", "--k", str(deepest + 1)]
    )
    assert result.exit_code == 1 and f"from 1 to {deepest}" in result.output, result.output


def test_the_browser_adds_tries_and_fetches_as_a_job(
    app: Flask, as_admin, search: FakeSearch
) -> None:
    from ndcg_labeler.services.jobs.runner import run_job

    with app.app_context():
        ts_id = build_test_set("web", {"q1": "refund policy", "q2": "parking"}).id
    base = f"/test-sets/{ts_id}/endpoints/"
    added = as_admin.post(
        base,
        data={
            "name": "es",
            "url": search.url + "/search?q={query}&size={k}",
            "method": "GET",
            "headers": "Authorization: Bearer ${SEARCH_API_TOKEN}",
            "preset": "elasticsearch",
            "text_field": "body",
        },
    )
    assert added.status_code == 302
    page = as_admin.post(base + "es", data={"try-query": "refund policy", "try-submit": "Try"})
    text = page.get_data(as_text=True)
    assert "2 results, as they would be stored" in text and "A new refund chunk." in text
    assert "s3cret" not in text  # header values are never shown
    bad = as_admin.post(base + "es", data={"try-query": "no id", "try-submit": "Try"})
    assert "hit 1: the id expression &#39;_id&#39; gave no docid" in bad.get_data(as_text=True)
    fetch = as_admin.post(
        base + "es", data={"fetch-run": "web run", "fetch-k": "10", "fetch-submit": "Fetch run"}
    )
    assert fetch.status_code == 302 and fetch.headers["Location"].startswith("/jobs/")
    job_id = int(fetch.headers["Location"].rsplit("/", 1)[1])
    with app.app_context():
        run_job(job_id)  # what the job worker does
        run = run_service.require_run(testsets.require_by_name("web"), "web run")
        assert run.num_queries == 2
        new = db.session.scalars(sa.select(Chunk.docid).where(Chunk.test_set_id == ts_id)).all()
        assert sorted(new) == ["d1", "d5", "new1"]  # the corpus grew with the returned texts
    shown = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "Run web run fetched" in shown and "New chunks added to the corpus: 3" in shown


def test_a_slow_endpoint_times_out_per_query_and_is_listed(
    app: Flask, runner: FlaskCliRunner, search: FakeSearch
) -> None:
    with app.app_context():
        build_test_set("slowset", {"q1": "parking", "q2": "slow"})
    args = ["endpoints", "add", "slowset", "es", "--url", search.url + "/s?q={query}"]
    args += ["--preset", "elasticsearch", "--timeout", "0.8"]
    assert runner.invoke(args=args).exit_code == 0
    result = runner.invoke(
        args=["endpoints", "fetch", "slowset", "es", "--run", "r", "--json", "--accept-partial"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.splitlines()[0])
    assert (report["fetched"], report["failed"]) == (1, 1)
    assert "left out q2: no answer from" in result.output
