"""The Python client against a live server on 127.0.0.1: how it meets a server that is
computing, slow to finish a job, refusing or down, and cancelling a job.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from werkzeug.serving import make_server

from ndcg_labeler.client import Client, ClientError
from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, TestSet, User
from ndcg_labeler.services.jobs.records import create_job
from tests.runs.test_client import Server, server  # noqa: F401 - the live server fixture


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
