"""The Python client (ndcg_labeler.client) against a live server on 127.0.0.1.

Expected values come from pytrec_eval on the same files, never from the server's own output.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pandas as pd
import pytest
import pytrec_eval
from flask import Flask
from werkzeug.serving import make_server

from ndcg_labeler.client import Client, ClientError
from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import accounts, jobs, testsets
from tests.factory import build_test_set, make_user
from tests.interop.test_ir_datasets import datasets  # noqa: F401 - the tiny ir_datasets fixture

QUERIES = {"q1": "reset my password", "q2": "vpn drops", "q3": "printer jam"}
QRELS = [("q1", "d1", 3), ("q1", "d2", 1), ("q2", "d3", 2), ("q2", "d4", 0), ("q3", "d5", 1)]
RUN = {"q1": {"d2": 3.0, "d1": 2.5, "d9": 1.0}, "q2": {"d4": 2.0, "d3": 1.0}, "q3": {"d8": 4.0}}
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Server:
    """The app served on a free port, with an admin's and an annotator's tokens."""

    url: str
    admin_token: str
    annotator_token: str


@pytest.fixture
def server(app: Flask) -> Iterator[Server]:
    admin, ann = make_user(app, "admin", "admin"), make_user(app, "ann", "annotator")
    with app.app_context():
        desk = build_test_set("desk", QUERIES, QRELS)
        testsets.grant(desk, db.session.get_one(User, ann))
        tokens = [accounts.create_token(db.session.get_one(User, uid)) for uid in (admin, ann)]
        db.session.remove()
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield Server(f"http://127.0.0.1:{http.server_port}", *tokens)
    finally:
        http.shutdown()
        thread.join(timeout=10)
        http.server_close()


def _pytrec(
    run: dict[str, dict[str, float]], k: int, measure: str = "", level: int = 1
) -> dict[str, float]:
    qrels = {}
    for qid, docid, grade in QRELS:
        qrels.setdefault(qid, {})[docid] = grade
    measure = measure or f"ndcg_cut_{k}"
    found = pytrec_eval.RelevanceEvaluator(qrels, {measure}, relevance_level=level).evaluate(run)
    return {qid: values[measure] for qid, values in found.items()}


def test_upload_a_dict_and_read_per_query_ndcg(server: Server) -> None:
    with Client(server.url, server.admin_token) as api:
        assert [s["name"] for s in api.test_sets()] == ["desk"]
        stored = api.upload_run("desk", RUN, name="bm25", series="nightly")
        assert stored["name"] == "bm25" and stored["num_queries"] == 3
        assert stored["series"] == "nightly"
        assert [r["name"] for r in api.runs("desk")] == ["bm25"]
        names = ["nDCG@3", "ndcg_cut_1", "bpref", "P(rel=2)@2"]
        values = api.scores("desk", "bm25", measures=names, as_frame=False)
        with pytest.raises(ClientError, match="unknown measure 'P@x'") as refused:
            api.scores("desk", "bm25", measures=["P@x"])
        assert refused.value.status == 400
    expected3, expected1 = _pytrec(RUN, 3), _pytrec(RUN, 1)
    bpref, precision = _pytrec(RUN, 0, "bpref"), _pytrec(RUN, 0, "P_2", level=2)
    for qid in QUERIES:
        assert values[qid]["nDCG@3"] == pytest.approx(expected3[qid], abs=1e-12)
        assert values[qid]["ndcg_cut_1"] == pytest.approx(expected1[qid], abs=1e-12)
        assert (values[qid]["bpref"] or 0.0) == pytest.approx(bpref.get(qid, 0.0), abs=1e-12)
        assert values[qid]["P(rel=2)@2"] == pytest.approx(precision.get(qid, 0.0), abs=1e-12)


def test_dataframes_go_in_and_come_out(server: Server) -> None:
    frame = pd.DataFrame(
        [(q, d, s) for q, docs in RUN.items() for d, s in docs.items()],
        columns=["qid", "docid", "score"],
    )
    with Client(server.url, server.admin_token) as api:
        api.upload_run("desk", frame, name="dense")
        scores = api.scores("desk", "dense", measures=["nDCG@3"])
        qrels = api.qrels("desk")
    assert isinstance(scores, pd.DataFrame) and scores.index.name == "qid"
    assert scores.loc["q1", "nDCG@3"] == pytest.approx(_pytrec(RUN, 3)["q1"], abs=1e-12)
    assert sorted(map(tuple, qrels.itertuples(index=False, name=None))) == sorted(QRELS)


def test_upload_a_file_and_import_files(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "splade.trec"
    path.write_text("q1 Q0 d1 1 9.0 s\nq2 Q0 d3 1 8.0 s\n")
    queries = tmp_path / "more.tsv"
    queries.write_text("q4\tmonitor flickers\n")
    with Client(server.url, server.admin_token) as api:
        stored = api.upload_run("desk", path)
        assert stored["name"] == "splade" and stored["report"]["entries_stored"] == 2
        imported = api.import_files("desk", queries=queries)
        assert any(line.startswith("queries: 1 created") for line in imported["report"])
        assert api.qrels("desk", as_frame=False)["q2"] == {"d3": 2, "d4": 0}


def test_the_gate_answers_with_its_outcome(server: Server) -> None:
    worse = {"q1": {"d9": 3.0, "d2": 2.0, "d1": 1.0}, "q2": {"d4": 2.0, "d3": 1.0}, "q3": {}}
    with Client(server.url, server.admin_token) as api:
        api.upload_run("desk", RUN, name="base")
        api.upload_run("desk", {q: d for q, d in worse.items() if d}, name="cand")
        verdict = api.gate("desk", "base", "cand", measures=["ndcg_cut_3"], max_drop=0.01)
    assert verdict["outcome"] in ("pass", "fail", "inconclusive")
    assert verdict["outcome"] != "pass"  # three queries cannot show non-inferiority


def test_errors_carry_the_servers_message(server: Server, tmp_path: Path) -> None:
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 2.0 s\nq1 Q0 d1 2 1.0 s\n")
    with Client(server.url, server.admin_token) as api:
        with pytest.raises(ClientError) as refused:
            api.upload_run("desk", bad)
        assert refused.value.status == 400 and "appears twice" in refused.value.message
        assert refused.value.details["line"] == 2
        with pytest.raises(ClientError, match="no such test set") as missing:
            api.runs("nowhere")
        assert missing.value.status == 404
    with Client(server.url, server.annotator_token) as api, pytest.raises(ClientError) as denied:
        api.upload_run("desk", RUN, name="mine")
    assert denied.value.status == 403 and "only admins" in denied.value.message
    with Client(server.url, "not-a-token") as api, pytest.raises(ClientError) as wrong:
        api.test_sets()
    assert wrong.value.status == 401


def test_the_client_imports_without_flask_or_sqlalchemy() -> None:
    """Notebook machines may have neither: the client must not pull the server in."""
    code = (
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'flask', 'sqlalchemy', 'flask_sqlalchemy', 'numpy'}:\n"
        "            raise ImportError(f'{name} must not be imported')\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "from ndcg_labeler.client import Client, ClientError\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_peer_formats_go_in_and_come_out(server: Server, tmp_path: Path) -> None:
    """Quepid CSV, SRW judgments and SRW query sets in; the exports out, and round-tripped."""
    quepid = tmp_path / "case.csv"
    # A known text is its query (q1); a new text becomes a new query; ratings 0–10 map to 0–3.
    quepid.write_text("query,docid,rating\nreset my password,d6,10\nscreen is black,d7,4\n")
    srw = json.dumps(
        {
            "name": "j",
            "judgmentRatings": [{"query": "vpn drops", "ratings": [{"docId": "d8", "rating": 3}]}],
        }
    )
    with Client(server.url, server.admin_token) as api:
        imported = api.import_peer("desk", quepid, "quepid", rating_map="0-10")
        assert imported["files"] == ["case.csv"]
        assert "queries: 1 created, 0 updated, 0 unchanged" in imported["report"]
        api.import_peer("desk", io.BytesIO(srw.encode()), "srw-judgments")
        api.import_peer("desk", io.BytesIO(b'{"queryText": "toner is low"}\n'), "srw-queries")
        qrels = api.qrels("desk", as_frame=False)
        judgments = api.export("desk", "quepid", to=tmp_path / "out.csv")
        queries = api.export("desk", "srw-queries")
        api.upload_run("desk", RUN, name="bm25")
        snapshot = api.export_run("desk", "bm25")
        with pytest.raises(ClientError, match="fmt must be one of"):
            api.import_peer("desk", quepid, "trec")
        with pytest.raises(ClientError, match="rating 10") as refused:
            api.import_peer("desk", quepid, "quepid")  # 10 is above the scale 0–3
        assert refused.value.status == 400 and refused.value.details["line"] == 2
        with pytest.raises(ClientError, match="export format must be one of"):
            api.export("desk", "trec")
    # rating_map 0-10 onto 0–3: 10 -> 3, 4 -> round(4 * 3 / 10) = 1.
    assert qrels["q1"]["d6"] == 3 and qrels["q2"]["d8"] == 3
    (new_qid,) = set(qrels) - set(QUERIES)
    assert qrels[new_qid] == {"d7": 1}
    rows = set(map(tuple, csv.reader(io.StringIO(judgments))))
    assert {("reset my password", "d1", "3"), ("screen is black", "d7", "1")} <= rows
    assert ("toner is low", "", "") in rows  # a query without grades is kept, as Quepid does
    assert (tmp_path / "out.csv").read_text(encoding="utf-8") == judgments
    texts = {q["queryText"] for q in json.loads(queries)["querySetQueries"]}
    assert texts == {*QUERIES.values(), "screen is black", "toner is low"}
    # The snapshot lists each query's documents in the run's order (score descending).
    ranked = [r[3:6] for r in csv.reader(io.StringIO(snapshot))][1:]
    assert ranked[:3] == [["reset my password", "d2", "1"], ["reset my password", "d1", "2"],
                          ["reset my password", "d9", "3"]]  # fmt: skip


def test_a_large_ir_dataset_is_a_job_the_client_waits_for(
    app: Flask,
    server: Server,
    datasets: tuple[str, str, str],  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    app.config["NDCG_JOB_THRESHOLD_MB"] = 10 / (1024 * 1024)  # the tiny dataset is "large"
    app.config["NDCG_JOBS_SQLITE"] = str(tmp_path / "jobs-queue.sqlite3")
    app.config["NDCG_JOBS_QUEUE"] = f"test-{uuid.uuid4().hex}"
    worker = jobs.worker(app, threads=1)
    worker._set_signal_handlers = lambda: None  # pytest keeps its own SIGINT handler
    worker.start()
    try:
        with Client(server.url, server.admin_token) as api:
            queued = api.import_ir_dataset("desk", datasets[0], wait=False)
            assert queued["job"]["state"] in ("queued", "running", "done")
            done = api.wait_for_job(queued["job"]["id"], poll=0.05, timeout=60)
            again = api.import_ir_dataset("desk", datasets[0], poll=0.05, timeout=60)
            with pytest.raises(ClientError, match=r"ir_datasets 'ndcg-test/four' has grade 4"):
                api.import_ir_dataset("desk", datasets[2], poll=0.05, timeout=60)
    finally:
        worker.stop(graceful=True)
    assert done["state"] == "done"
    assert "queries: 2 created, 0 updated, 0 unchanged" in done["result"]["lines"]
    # The second time, the same dataset changes nothing; the report has the inline shape.
    assert "queries: 0 created, 0 updated, 2 unchanged" in again["report"]
    assert again["job"]["state"] == "done"


def _refusing_client() -> Client:
    """A client whose every request fails the test: refusals must come before sending."""

    def no_request(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"the client sent {request.method} {request.url}")

    return Client("http://127.0.0.1:9", token="ndcg_x", transport=httpx.MockTransport(no_request))


@pytest.mark.parametrize(
    ("run", "message"),
    [
        # Split on whitespace as TREC, "q1 Q0 doc 7 1 1.0" would score docid 'doc' at 1.0.
        ({"q1": {"doc 7": 1.0}}, "docid 'doc 7' of query 'q1' contains whitespace"),
        ({"q 1": {"d": 1.0}}, "qid 'q 1' contains whitespace"),
        ({"q1": {"d\t2": 1.0}}, "docid 'd\\t2' of query 'q1' contains whitespace"),
        ({"": {"d": 1.0}}, "qid '' is empty"),
        ({"q1": {"": 1.0}}, "docid '' of query 'q1' is empty"),
        ({"q1": {"d": "abc"}}, "score of query 'q1', docid 'd' is 'abc', not a number"),
        ({"q1": {"d": None}}, "score of query 'q1', docid 'd' is None, not a number"),
        ({"q1": {"d": float("nan")}}, "score of query 'q1', docid 'd' is nan, not a finite"),
        ({"q1": {"d": float("-inf")}}, "score of query 'q1', docid 'd' is -inf, not a finite"),
    ],
)
def test_a_run_a_trec_file_cannot_carry_is_refused_before_sending(run: dict, message: str) -> None:
    with _refusing_client() as api, pytest.raises(ClientError) as refused:
        api.upload_run("desk", run, name="r")
    assert refused.value.message.startswith(message)


def test_a_dataframe_row_a_trec_file_cannot_carry_is_refused_before_sending() -> None:
    frame = pd.DataFrame({"qid": ["q1", "q1"], "docid": ["d1", "d 2"], "score": [2.0, 1.0]})
    with _refusing_client() as api, pytest.raises(ClientError, match="docid 'd 2' of query"):
        api.upload_run("desk", frame, name="r")


def test_wait_for_job_gives_up_at_its_timeout_not_a_poll_later() -> None:
    asked: list[float] = []

    def queued(request: httpx.Request) -> httpx.Response:
        asked.append(time.monotonic())
        return httpx.Response(200, json={"id": 7, "state": "queued", "finished": False})

    api = Client("http://127.0.0.1:9", token="ndcg_x", transport=httpx.MockTransport(queued))
    start = time.monotonic()
    with api, pytest.raises(ClientError) as late:
        api.wait_for_job(7, poll=30, timeout=0.3)
    assert time.monotonic() - start < 5  # not the 30 s poll past a 0.3 s timeout
    assert late.value.message == "job 7 is still queued after the timeout of 0.3 s"
    assert late.value.details["state"] == "queued"
    assert len(asked) == 2  # at once, and once more at the timeout


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_says_where_the_server_sent_the_client(status: int, tmp_path: Path) -> None:
    def to_https(request: httpx.Request) -> httpx.Response:
        target = str(request.url).replace("http://", "https://")
        return httpx.Response(status, headers={"Location": target})

    api = Client("http://ndcg.test", token="ndcg_x", transport=httpx.MockTransport(to_https))
    with api:
        with pytest.raises(ClientError) as moved:
            api.test_sets()
        # A download too: never the redirect's body returned (and written) as the file.
        with pytest.raises(ClientError, match=r"redirected to https://ndcg\.test/api/test"):
            api.export("desk", to=tmp_path / "never-written.csv")
    assert moved.value.status == status
    assert moved.value.message == (
        "the server redirected to https://ndcg.test/api/testsets: give Client the server's "
        "own address (https, or the path the app is served under)"
    )
    assert not (tmp_path / "never-written.csv").exists()


def test_a_server_that_does_not_answer_in_time_is_not_called_unreachable() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    api = Client(
        "http://ndcg.test", token="ndcg_x", timeout=2.5, transport=httpx.MockTransport(slow)
    )
    with api:
        with pytest.raises(ClientError) as late:
            api.test_sets()
        with pytest.raises(ClientError) as late_download:
            api.export("desk")
    for refused in (late.value, late_download.value):
        assert refused.message == (
            "the server did not answer within 2.5 s (ReadTimeout): it may still be working; "
            "give Client a larger timeout="
        )


@pytest.mark.parametrize(
    "run",
    [{}, {"q1": {}}, pd.DataFrame({"qid": [], "docid": [], "score": []})],
    ids=["dict", "queries-without-docs", "dataframe"],
)
def test_an_empty_run_is_refused_before_sending(run: object) -> None:
    # Sent, it came back as "r.trec: file is empty", about a file the caller never wrote.
    with _refusing_client() as api, pytest.raises(ClientError) as refused:
        api.upload_run("desk", run, name="r")
    assert refused.value.message == "the run has no (qid, docid, score) entry to upload"


@pytest.mark.parametrize("given", ["ndcg_abc\n", "  ndcg_abc\r\n", "\tndcg_abc "])
def test_a_token_read_with_its_line_break_is_sent_without_it(
    given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers["Authorization"])
        return httpx.Response(200, json={"test_sets": []})

    transport = httpx.MockTransport(answer)
    with Client("http://ndcg.test", token=given, transport=transport) as api:
        assert api.test_sets() == []
    monkeypatch.setenv("NDCG_TOKEN", given)  # `export NDCG_TOKEN="$(cat token.txt)"` and kin
    with Client("http://ndcg.test", transport=transport) as api:
        assert api.test_sets() == []
    assert sent == ["Bearer ndcg_abc", "Bearer ndcg_abc"]


def test_a_token_with_a_break_inside_is_refused_without_showing_it() -> None:
    with pytest.raises(ClientError) as refused:
        Client("http://ndcg.test", token="ndcg_secret\npart", transport=httpx.MockTransport(None))
    assert refused.value.message == (
        "the API token has a blank or a line break inside: copy it again from the Account page"
    )
    assert "secret" not in str(refused.value)


@pytest.mark.parametrize(
    "columns, message",
    [
        (["qid", "docid"], "the DataFrame lacks the column 'score'"),
        (["query", "doc", "score"], "the DataFrame lacks the columns 'docid' and 'qid'"),
    ],
)
def test_a_dataframe_without_a_runs_columns_names_them(columns: list, message: str) -> None:
    frame = pd.DataFrame([["q1", "d1", 1.0][: len(columns)]], columns=columns)
    with _refusing_client() as api, pytest.raises(ClientError) as refused:
        api.upload_run("desk", frame, name="r")
    assert refused.value.message == message
