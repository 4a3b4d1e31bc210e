"""The outbound policy and the secrets allow-list (issue 28, items 1 and 2), against a fake
server on 127.0.0.1: what endpoints and judges may reach, what they say when they cannot, and
which environment variables they may send."""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from ndcg_labeler import config
from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, Judge, RetrieverEndpoint
from ndcg_labeler.services import ServiceError, endpoints, judges, outbound
from ndcg_labeler.services.jobs.runner import run_job
from ndcg_labeler.services.judges.client import JudgeConfig, RateLimiter, ask
from ndcg_labeler.services.outbound.policy import current_policy
from tests.factory import PASSWORD, build_test_set

BODY_SECRET = "INTERNAL-PAGE-TEXT"


class FakeService:
    """A search endpoint and a chat-completions endpoint on 127.0.0.1 that note what reached it."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def app(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        self.seen.append({"path": request.path, "host": request.host, **request.headers})
        if request.path.endswith("/boom/chat/completions") or request.path == "/boom":
            response = Response(f"<h1>{BODY_SECRET}</h1>", status=500)
        elif request.path == "/redirect":
            response = Response("", status=302, headers={"Location": "http://169.254.169.254/"})
        else:
            hits = [{"id": "d1", "score": 2.0}, {"id": "d2", "score": 1.0}]
            response = Response(json.dumps(hits), content_type="application/json")
        return response(environ, start_response)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeService]:
    monkeypatch.setattr("ndcg_labeler.services.endpoints.client.BACKOFF", 0.0)
    monkeypatch.setattr("ndcg_labeler.services.judges.client.BACKOFF", 0.0)
    server = FakeService()
    yield server
    server.stop()


@pytest.fixture
def policy_on(app: Flask) -> Flask:
    """The policy as an operator who locks it down sets it: only the fake server's address."""
    app.config["NDCG_OUTBOUND_ALLOW"] = "127.0.0.1"
    return app


def _try(app: Flask, url: str, name: str = "ep", headers: list[str] | None = None) -> str:
    """The hits' docids, or the error, of one query to an endpoint at `url` (no request)."""
    with app.app_context():
        test_set = build_test_set(f"set-{name}", {"q1": "refund"})
        endpoint = endpoints.add_endpoint(
            test_set, name, url, headers=headers, hits="@", id_expr="id", score="score"
        )
        try:
            return ",".join(hit.docid for hit in endpoints.try_query(endpoint, "refund"))
        except ServiceError as exc:
            return str(exc)


def test_local_model_servers_are_reached_by_default(app: Flask, service: FakeService) -> None:
    assert _try(app, service.url + "/s?q={query}") == "d1,d2"


def test_refused_addresses_are_never_connected_to(
    app: Flask, policy_on: Flask, service: FakeService, record_property: Any
) -> None:
    cases = {
        "metadata": ("http://169.254.169.254/latest/meta-data?q={query}", "cloud metadata"),
        "this-network": ("http://0.0.0.0:{port}/s?q={query}", "'this network'"),
        "link-local-v6": ("http://[fe80::1]:{port}/s?q={query}", "link-local"),
        "v4-mapped": ("http://[::ffff:169.254.169.254]/s?q={query}", "cloud metadata"),
        "not-allowed": ("http://10.0.0.5:{port}/s?q={query}", "not listed in NDCG_OUTBOUND_ALLOW"),
    }
    for n, (name, (url, why)) in enumerate(cases.items()):
        message = _try(app, url.replace("{port}", str(service.port)), f"e{n}")
        assert message.startswith("refused by the outbound policy") and why in message, name
    app.config["NDCG_OUTBOUND_DENY"] = "127.0.0.0/8"
    denied = _try(app, service.url + "/s?q={query}", "denied")
    assert "listed in NDCG_OUTBOUND_DENY" in denied
    app.config["NDCG_OUTBOUND_DENY"] = "localhost"  # by name: the name in the URL
    assert "listed in NDCG_OUTBOUND_DENY" in _try(
        app, f"http://localhost:{service.port}/s?q={{query}}", "denied-by-name"
    )
    assert service.seen == []  # nothing reached the server
    record_property(
        "security-summary",
        f"outbound: {len(cases) + 2} cases refused before connecting (metadata 169.254.169.254 "
        "and its IPv4-mapped form, 0.0.0.0, fe80::1, outside NDCG_OUTBOUND_ALLOW, "
        "NDCG_OUTBOUND_DENY by CIDR and by name); 0 requests reached the server",
    )


def test_the_apps_own_address_is_refused(
    app: Flask,
    client: FlaskClient,
    admin_id: int,
    policy_on: Flask,
    service: FakeService,
    record_property: Any,
) -> None:
    # The app answers here as 127.0.0.1:<port>; the same server seen from localhost is another.
    own = {"base_url": service.url}
    for where in ({}, own):
        login = {"username": "admin", "password": PASSWORD}
        assert client.post("/login", data=login, **where).status_code == 302
    with app.app_context():
        ts_id = build_test_set("own", {"q1": "refund"}).id
    base = f"/test-sets/{ts_id}/endpoints/"
    data = {"name": "self", "url": service.url + "/s?q={query}", "method": "GET"}
    added = client.post(base, data={**data, "hits": "@", "id_expr": "id", "score": "score"})
    assert added.status_code == 302
    page = client.post(base + "self", data={"try-query": "x", "try-submit": "Try"}, **own)
    assert "this application&#39;s own address" in page.get_data(as_text=True)
    # Another loopback address reaches a server bound to 127.0.0.1 just the same: refused too.
    with app.test_request_context(**own):
        policy = current_policy()
        assert "own address" in policy.refusal("127.0.0.2", _ip("127.0.0.2"), service.port)
        assert not policy.refusal("127.0.0.1", _ip("127.0.0.1"), service.port + 1)
    # A fetch queued from that request keeps its names: the worker has no request of its own.
    fetch = {"fetch-run": "r", "fetch-k": "10", "fetch-submit": "Fetch run"}
    queued = client.post(base + "self", data=fetch, **own)
    assert queued.status_code == 302
    with app.app_context():
        run_job(int(queued.headers["Location"].rsplit("/", 1)[1]))
        job = db.session.scalars(sa.select(Job)).one()
        assert job.state == "failed" and "this application's own address" in job.error
    with app.test_request_context(base_url="http://[::1]:5000"):
        assert "own address" in current_policy().refusal("::1", _ip("::1"), 5000)
    app.config["SERVER_NAME"] = f"127.0.0.1:{service.port}"
    with app.app_context():
        assert "own address" in current_policy().refusal(
            "127.0.0.1", _ip("127.0.0.1"), service.port
        )
    app.config["SERVER_NAME"] = None
    assert service.seen == []
    elsewhere = client.post(base + "self", data={"try-query": "x", "try-submit": "Try"})
    assert "2 results, as they would be stored" in elsewhere.get_data(as_text=True)
    record_property(
        "security-summary",
        "outbound: the app's own address refused (the request's Host, in a fetch job it queued, "
        "another loopback address on its port, SERVER_NAME); the same server from elsewhere",
    )


def test_the_check_is_made_on_the_address_connected_to(
    app: Flask,
    policy_on: Flask,
    service: FakeService,
    monkeypatch: pytest.MonkeyPatch,
    record_property: Any,
) -> None:
    answers = {"search.test": ["127.0.0.1"], "rebind.test": ["127.0.0.1", "169.254.169.254"]}
    calls: list[str] = []

    def resolver(host: str, port: int) -> list[Any]:
        calls.append(host)
        found = answers[host]
        # DNS rebinding: the first answer is harmless, every later one points at metadata.
        index = min(calls.count(host) - 1, len(found) - 1)
        return [_ip(found[index])]

    monkeypatch.setattr("ndcg_labeler.services.outbound.transport.resolve", resolver)
    app.config["NDCG_OUTBOUND_ALLOW"] = "127.0.0.1,search.test,rebind.test"
    url = f"http://search.test:{service.port}/s?q={{query}}"
    assert _try(app, url, "by-name") == "d1,d2"
    assert service.seen[-1]["host"] == f"search.test:{service.port}"  # Host kept, IP connected
    rebind = f"http://rebind.test:{service.port}/s?q={{query}}"
    assert _try(app, rebind, "rebind-1") == "d1,d2"
    message = _try(app, rebind, "rebind-2")
    assert "169.254.169.254 is a link-local or cloud metadata address" in message
    assert len(service.seen) == 2
    record_property(
        "security-summary",
        "outbound: checked on the address connected to (Host kept); a name that resolves to "
        "127.0.0.1, then to 169.254.169.254 (DNS rebinding), refused at the second connect",
    )


def test_errors_carry_a_status_line_and_one_message_for_no_connection(
    app: Flask, policy_on: Flask, service: FakeService, record_property: Any
) -> None:
    boom = _try(app, service.url + "/boom?q={query}", "boom")
    assert boom == "HTTP 500 INTERNAL SERVER ERROR" and BODY_SECRET not in boom
    redirect = _try(app, service.url + "/redirect?q={query}", "redirect")
    # Not followed, and said so without the other side's words (where it leads).
    assert redirect == "HTTP 302 FOUND: a redirect, which is not followed: give the URL it leads to"
    closed, silent = _closed_port(), _open_port_that_hangs_up()
    refused = _try(app, f"http://127.0.0.1:{closed}/s?q={{query}}", "closed")
    dropped = _try(app, f"http://127.0.0.1:{silent}/s?q={{query}}", "dropped")
    assert refused.replace(str(closed), "P") == dropped.replace(str(silent), "P")
    assert refused == f"could not connect to 127.0.0.1:{closed}"
    url = "http://10.1.2.3:81/"
    assert outbound.failure(httpx.ConnectTimeout("filtered"), url, 5) == outbound.failure(
        httpx.ConnectError("[Errno 111] Connection refused"), url, 5
    )
    with app.app_context(), outbound.outbound_client() as client:
        config = JudgeConfig(service.url + "/boom", "m", "", 0.0, 8, 5.0, 0)
        answer = ask(client, config, "prompt", RateLimiter(0))
        assert answer.error == "HTTP 500 INTERNAL SERVER ERROR"
        config = JudgeConfig(f"http://127.0.0.1:{closed}/v1", "m", "", 0.0, 8, 5.0, 0)
        assert ask(client, config, "p", RateLimiter(0)).error == refused
        config = JudgeConfig("http://169.254.169.254/v1", "m", "", 0.0, 8, 5.0, 0)
        assert "refused by the outbound policy" in ask(client, config, "p", RateLimiter(0)).error
    record_property(
        "security-summary",
        "outbound errors: endpoints and judges give a status line, never the body; one message "
        "for a closed port, a port that hangs up and a filtered one; redirects not followed",
    )


URL = "http://search.internal/?q={query}"
REFUSED_NAMES = ["NDCG_ADMIN_PASSWORD", "DATABASE_URL", "NDCG_SECRET_KEY", "HOME"]


def test_secrets_outside_the_allow_list_are_refused_at_save(
    app: Flask, runner: FlaskCliRunner, as_admin: Any, record_property: Any
) -> None:
    with app.app_context():
        test_set = build_test_set("sec", {"q1": "refund"})
        ts_id = test_set.id
        for name in REFUSED_NAMES:
            refused = f"{name} may not be sent.*NDCG_SECRET_ENV"
            with pytest.raises(ServiceError, match=refused):
                endpoints.add_endpoint(
                    test_set, "e", URL, headers=[f"X-Key: a ${{{name}}}"], hits="@", id_expr="id"
                )
            with pytest.raises(ServiceError, match=refused):
                judges.add_judge("j", "http://x/v1", "m", api_key_env=name)
        # Never the app's own settings, whatever the globs say.
        app.config["NDCG_SECRET_ENV"] = "*"
        for name in ("NDCG_ADMIN_PASSWORD", "DATABASE_URL"):
            with pytest.raises(ServiceError, match="never NDCG_\\* or DATABASE_URL"):
                judges.add_judge("j", "http://x/v1", "m", api_key_env=name)
        app.config["NDCG_SECRET_ENV"] = None
        endpoints.add_endpoint(
            test_set, "ok", URL, headers=["X-Key: ${OPENAI_API_KEY}"], hits="@", id_expr="id"
        )
        judges.add_judge("ok", "http://x/v1", "m", api_key_env="OPENAI_API_KEY")
    cli = runner.invoke(
        args=["endpoints", "add", "sec", "cli", "--url", "http://x/?q={query}",
              "--header", "X-Leak: ${DATABASE_URL}", "--hits", "@", "--id", "id"]
    )  # fmt: skip
    assert cli.exit_code == 1 and "NDCG_SECRET_ENV" in cli.output
    cli = runner.invoke(
        args=["judges", "add", "cli", "--base-url", "http://x/v1", "--model", "m",
              "--api-key-env", "NDCG_SECRET_KEY"]
    )  # fmt: skip
    assert cli.exit_code == 1 and "NDCG_SECRET_ENV" in cli.output
    web = as_admin.post(
        f"/test-sets/{ts_id}/endpoints/",
        data={"name": "web", "url": "http://x/?q={query}", "method": "GET",
              "headers": "X-Leak: ${NDCG_ADMIN_PASSWORD}", "hits": "@", "id_expr": "id"},
    )  # fmt: skip
    assert web.status_code == 200 and "NDCG_SECRET_ENV" in web.get_data(as_text=True)
    web = as_admin.post(
        "/judges/",
        data={"name": "web", "base_url": "http://x/v1", "model": "m", "temperature": "0",
              "api_key_env": "NDCG_SECRET_KEY", "max_tokens": "8", "timeout": "5",
              "concurrency": "1", "requests_per_minute": "0"},
    )  # fmt: skip
    assert web.status_code == 200 and "NDCG_SECRET_ENV" in web.get_data(as_text=True)
    with app.app_context():
        assert {j.name for j in judges.list_judges()} == {"ok"}
    record_property(
        "security-summary",
        f"secrets: {len(REFUSED_NAMES)} names refused at save for endpoint headers and judge "
        f"keys ({', '.join(REFUSED_NAMES)}; service, CLI and web form), NDCG_* and "
        "DATABASE_URL refused even under NDCG_SECRET_ENV=*, refused again when used; "
        "OPENAI_API_KEY accepted",
    )


def test_secrets_saved_before_the_rule_are_refused_when_used(
    app: Flask, service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_API_KEY", "fine")
    with app.app_context():
        test_set = build_test_set("old", {"q1": "refund"})
        # Rows as an older version wrote them, without the check.
        db.session.add(
            RetrieverEndpoint(
                test_set_id=test_set.id, name="old", url=service.url + "/s?q={query}",
                method="GET", body_template="", headers={"X-Leak": "${NDCG_ADMIN_PASSWORD}"},
                hits_expr="@", id_expr="id", score_expr="score", text_expr="",
                concurrency=1, requests_per_minute=0, timeout=5.0,
            )
        )  # fmt: skip
        db.session.add(Judge(name="old", base_url=service.url, model="m", max_tokens=8,
                             api_key_env="NDCG_SECRET_KEY"))  # fmt: skip
        db.session.commit()
        endpoint = endpoints.require_endpoint(test_set, "old")
        with pytest.raises(ServiceError, match="NDCG_ADMIN_PASSWORD may not be sent"):
            endpoints.try_query(endpoint, "refund")
        with pytest.raises(ServiceError, match="NDCG_SECRET_KEY may not be sent"):
            judges.run_judge(test_set, judges.require_judge("old"))
        endpoint.headers = {"Authorization": "Bearer ${SEARCH_API_KEY}"}
        db.session.commit()
        assert [h.docid for h in endpoints.try_query(endpoint, "refund")] == ["d1", "d2"]
    assert [s.get("Authorization") for s in service.seen] == ["Bearer fine"]


def test_the_settings_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NDCG_SECRET_KEY", "k")
    monkeypatch.setenv("NDCG_OUTBOUND_ALLOW", "10.0.0.5,search.internal")
    monkeypatch.setenv("NDCG_OUTBOUND_DENY", "10.0.0.0/8")
    monkeypatch.setenv("NDCG_SECRET_ENV", "SEARCH_*")
    settings = config.from_environment(str(tmp_path))
    assert settings["NDCG_OUTBOUND_ALLOW"] == "10.0.0.5,search.internal"
    assert settings["NDCG_OUTBOUND_DENY"] == "10.0.0.0/8"
    assert settings["NDCG_SECRET_ENV"] == "SEARCH_*"


def _ip(text: str) -> Any:
    return ipaddress.ip_address(text)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _open_port_that_hangs_up() -> int:
    """A port that accepts and closes at once (an open port that does not speak HTTP)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()

    def serve() -> None:
        with sock:
            for _ in range(8):
                conn, _addr = sock.accept()
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return int(sock.getsockname()[1])
