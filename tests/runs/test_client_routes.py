"""The Python client's cover of the API a CI script needs, against a live server on 127.0.0.1:
the routes beside uploads and scores (status, next labels, the gate's reports, tags, archives,
judges' settings and audits, cancelling jobs), and how it meets a server that is computing,
slow to finish a job, refusing or down.

Expected values come from the fixture's runs and grades worked out by hand.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval
from flask import Flask
from werkzeug.serving import make_server

from ndcg_labeler.client import Client, ClientError
from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, TestSet, User
from ndcg_labeler.services import judges
from ndcg_labeler.services.jobs.records import create_job
from tests.runs.test_client import QRELS, RUN, Server, server  # noqa: F401 - the live server

# Top 2 of RUN: q1 d2 d1, q2 d4 d3, q3 d8. Top 2 of OTHER: q1 d9 d7, q2 d3, q3 d5 d6.
# Judged (QRELS): q1 d1 d2, q2 d3 d4, q3 d5. Unjudged in either top 2: these four.
OTHER = {"q1": {"d9": 5.0, "d7": 4.0, "d2": 1.0}, "q2": {"d3": 1.0}, "q3": {"d5": 2.0, "d6": 1.0}}
UNJUDGED_TOP_2 = {("q1", "d9"), ("q1", "d7"), ("q3", "d8"), ("q3", "d6")}


def test_status_next_labels_and_the_gates_reports(server: Server, tmp_path: Path) -> None:  # noqa: F811
    with Client(server.url, server.admin_token) as api:
        api.upload_run("desk", RUN, name="base")
        api.upload_run("desk", OTHER, name="cand")
        status = api.status("desk")
        plan = api.next_labels("desk", "base", "cand", depth=2)
        junit = api.gate_report("desk", "base", "cand", ["ndcg_cut_3"], to=tmp_path / "gate.xml")
        markdown = api.gate_report("desk", "base", "cand", fmt="markdown")
        verdict = api.gate("desk", "base", "cand", ["ndcg_cut_3"])
        with pytest.raises(ClientError, match="fmt must be junit or markdown, not 'html'"):
            api.gate_report("desk", "base", "cand", fmt="html")
        with pytest.raises(ClientError, match="has no run 'nope'") as missing:
            api.next_labels("desk", "base", "nope")
    assert missing.value.status == 404
    assert isinstance(status, dict) and status  # the checklist, whatever its steps say
    assert (plan["run_a"], plan["run_b"], plan["depth"]) == ("base", "cand", 2)
    assert {(p["qid"], p["docid"]) for p in plan["pairs"]} == UNJUDGED_TOP_2
    root = ET.fromstring(junit)  # XML a CI server reads
    assert root.tag in ("testsuites", "testsuite")
    assert (tmp_path / "gate.xml").read_text(encoding="utf-8") == junit
    assert verdict["outcome"] in markdown.lower()


def test_tags_archive_judge_settings_and_audits(app: Flask, server: Server) -> None:  # noqa: F811
    with app.app_context():
        judges.add_judge("gpt", "http://127.0.0.1:9/v1", "none")
        db.session.remove()
    with Client(server.url, server.admin_token) as api:
        api.upload_run("desk", RUN, name="bm25")
        tagged = api.tag_run("desk", "bm25", add=["baseline", "nightly"], pinned=True)
        untagged = api.tag_run("desk", "bm25", remove=["nightly"])
        api.upload_run("desk", {"q1": {f"x{n}": 100.0 - n for n in range(12)}}, name="deep")
        archived = api.archive_run("desk", "deep", keep=10)
        with pytest.raises(ClientError) as too_deep:
            api.archive_run("desk", "deep", keep=10)  # already 10 deep: nothing to drop
        before = api.judge_settings("gpt", concurrency=3)
        after = api.judge_settings("gpt", concurrency=5)
        with pytest.raises(ClientError) as out_of_range:
            api.judge_settings("gpt", concurrency=0)
        drawn = api.draw_audit("desk", "gpt", 2, seed=7)
        sample = api.audit_sample("desk", "gpt")
    with Client(server.url, server.annotator_token) as api:
        with pytest.raises(ClientError, match="no judge 'gpt'") as hidden:
            api.judge_settings("gpt", concurrency=2)
        with pytest.raises(ClientError, match="only admins tag runs") as denied:
            api.tag_run("desk", "bm25", add=["x"])
    assert sorted(tagged["tags"]) == ["baseline", "nightly"] and tagged["pinned"] is True
    assert untagged["tags"] == ["baseline"]
    # 12 entries of one query, 10 kept: 2 dropped.
    assert archived["entries_dropped"] == 2
    assert too_deep.value.status == 400 and too_deep.value.message
    assert after["changed"] == {"concurrency": [3, 5]} and after["settings"]["concurrency"] == 5
    assert before["judge"] == "gpt"
    assert out_of_range.value.status == 400 and "concurrency" in out_of_range.value.message
    assert (hidden.value.status, denied.value.status) == (404, 403)
    assert len(drawn["queries"]) == 2 and drawn["seed"] == 7
    assert sample["queries"] == drawn["queries"] and sample["seed"] == 7


def _queued_job(app: Flask, message: str) -> int:
    """A job of the admin's that no worker runs, saying `message`; its id."""
    with app.app_context():
        admin = db.session.execute(db.select(User).filter_by(username="admin")).scalar_one()
        desk = db.session.execute(db.select(TestSet).filter_by(name="desk")).scalar_one()
        job = create_job("import", desk.id, admin.id, {})
        job_id = job.id
        db.session.get_one(Job, job_id).message = message
        db.session.commit()
        db.session.remove()
    return job_id


def test_a_job_timeout_names_the_job_and_its_last_message_and_a_cancel_ends_it(
    app: Flask,
    server: Server,  # noqa: F811
) -> None:
    job_id = _queued_job(app, "waiting for a worker")
    with Client(server.url, server.admin_token) as api:
        with pytest.raises(ClientError) as late:
            api.wait_for_job(job_id, poll=0.05, timeout=0.2)
        cancelled = api.cancel_job(job_id)
        with pytest.raises(ClientError) as ended:
            api.wait_for_job(job_id, poll=0.05, timeout=5)
        with pytest.raises(ClientError) as again:
            api.cancel_job(job_id)
        with pytest.raises(ClientError, match="no such job") as unknown:
            api.cancel_job(job_id + 1000)
    assert late.value.message == (
        f"job {job_id} is still queued after the timeout of 0.2 s; "
        "its last message: waiting for a worker"
    )
    assert cancelled["id"] == job_id and cancelled["state"] == "cancelled"
    assert ended.value.message.startswith(f"job {job_id} cancelled: ")
    assert again.value.status == 409
    assert again.value.message == "the job had already ended (cancelled)"
    assert unknown.value.status == 404


def _served(app: Callable[..., Any]) -> Iterator[str]:
    """The WSGI app on a free port of 127.0.0.1, its address."""
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{http.server_port}"
    finally:
        http.shutdown()
        thread.join(timeout=10)
        http.server_close()


def _computing_first(app: Flask, times: int) -> tuple[Callable[..., Any], list[str]]:
    """The app behind a door that answers each GET 202 "still computing, Retry-After: 1" its
    first `times` times (as the figures' downloads do), and the paths asked."""
    asked: list[str] = []

    def door(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ["PATH_INFO"]
        asked.append(path)
        if environ["REQUEST_METHOD"] == "GET" and asked.count(path) <= times:
            body = json.dumps({"status": "computing", "detail": "figures being computed"})
            headers = [("Content-Type", "application/json"), ("Retry-After", "1")]
            start_response("202 Accepted", headers)
            return [body.encode()]
        return app(environ, start_response)

    return door, asked


def test_a_202_with_retry_after_is_asked_again_after_the_wait(
    app: Flask,
    server: Server,  # noqa: F811 - for its test set and tokens
) -> None:
    door, asked = _computing_first(app, times=1)
    for url in _served(door):
        with Client(url, server.admin_token) as api:
            start = time.monotonic()
            sets = api.test_sets()
            exported = api.export("desk", "srw-queries")  # a download too
            took = time.monotonic() - start
    assert [s["name"] for s in sets] == ["desk"]
    assert "reset my password" in exported and "computing" not in exported
    assert asked.count("/api/testsets") == 2 and asked.count("/api/testsets/desk/export") == 2
    assert took >= 1.9  # each waited the second Retry-After asked for


def test_a_server_still_computing_past_the_bound_is_an_error(
    app: Flask,
    server: Server,  # noqa: F811
) -> None:
    door, asked = _computing_first(app, times=1000)
    for url in _served(door):
        with Client(url, server.admin_token, computing_timeout=1.5) as api:
            start = time.monotonic()
            with pytest.raises(ClientError) as late:
                api.runs("desk")
            took = time.monotonic() - start
    assert late.value.status == 202
    assert late.value.message == (
        "the server was still computing after 1.5 s (figures being computed); "
        "give Client a larger computing_timeout="
    )
    assert 1.4 <= took < 4 and len(asked) == 3  # at once, after 1 s, after the last 0.5 s


def test_a_server_that_is_down_is_one_line_naming_its_address() -> None:
    with socket.socket() as probe:  # a port nobody listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api = Client(f"http://127.0.0.1:{port}/", token="ndcg_x")
    with api, pytest.raises(ClientError) as down:
        api.test_sets()
    message = down.value.message
    assert message.startswith(f"could not reach the server at http://127.0.0.1:{port}: ")
    assert "refused" in message.lower() and "\n" not in message
    assert down.value.status is None


def _ndcg_at_3(run: dict[str, dict[str, float]]) -> dict[str, float]:
    """pytrec_eval's NDCG@3 per query of the run under the fixture's grades."""
    qrels: dict[str, dict[str, int]] = {}
    for qid, docid, grade in QRELS:
        qrels.setdefault(qid, {})[docid] = grade
    found = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_3"}).evaluate(run)
    return {qid: values["ndcg_cut_3"] for qid, values in found.items()}


def test_a_series_trend_as_pytrec_eval_scores_its_runs(server: Server) -> None:  # noqa: F811
    with Client(server.url, server.admin_token) as api:
        api.upload_run("desk", RUN, name="night-1", series="nightly")
        api.upload_run("desk", OTHER, name="night-2", series="nightly")
        api.upload_run("desk", RUN, name="loner")  # in no series
        listed = api.series("desk")
        trend = api.series_trend("desk", "nightly", k=3)
        with pytest.raises(ClientError) as unknown:
            api.series_trend("desk", "weekly")
        with pytest.raises(ClientError) as bad_k:
            api.series_trend("desk", "nightly", k=0)
    assert [(s["series"], s["runs"], s["latest"]) for s in listed] == [("nightly", 2, "night-2")]
    assert trend["series"] == "nightly" and trend["k"] == 3
    first, second = trend["points"]
    a, b = _ndcg_at_3(RUN), _ndcg_at_3(OTHER)
    assert (first["run"], second["run"], second["previous"]) == ("night-1", "night-2", "night-1")
    assert first["mean_ndcg"] == pytest.approx(sum(a.values()) / 3, abs=1e-12)
    assert second["mean_ndcg"] == pytest.approx(sum(b.values()) / 3, abs=1e-12)
    assert second["delta"] == pytest.approx(sum(b[q] - a[q] for q in a) / 3, abs=1e-12)
    assert second["paired_queries"] == 3 and first["delta"] is None
    assert trend["baseline"]["run"] in ("night-1", "night-2") and trend["checks"] == []
    assert unknown.value.status == 404
    assert unknown.value.message == "test set 'desk' has no series named 'weekly'"
    assert bad_k.value.status == 400 and "k must be" in bad_k.value.message


def test_an_error_page_that_is_not_json_is_quoted_not_only_its_status(
    app: Flask,
    server: Server,  # noqa: F811
) -> None:
    """A proxy in front of the app answers its own HTML page: its words, not a bare 502."""
    page = (
        "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n"
        "<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx/1.24.0</center>\n"
        "</body>\n</html>\n" + "<!-- padding -->\n" * 50
    )

    def proxy(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        start_response("502 Bad Gateway", [("Content-Type", "text/html")])
        return [page.encode()]

    for url in _served(proxy):
        with Client(url, server.admin_token) as api, pytest.raises(ClientError) as refused:
            api.runs("desk")
    assert refused.value.status == 502
    assert refused.value.message == (
        "the server answered HTTP 502 Bad Gateway: 502 Bad Gateway 502 Bad Gateway nginx/1.24.0"
    )
