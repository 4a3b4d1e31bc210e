"""Every request made on an admin's behalf ends by its timeout and reads a bounded answer."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from flask import Flask

from ndcg_labeler.services import ServiceError, endpoints, outbound
from ndcg_labeler.services.judges.client import JudgeConfig, RateLimiter, ask
from tests.factory import build_test_set

HITS = json.dumps([{"id": "d1", "score": 1.0}]).encode()


class RawServer:
    """An HTTP/1.1 server on 127.0.0.1 that answers every request with `head` then `body`,
    sending the body `step` bytes at a time, `pause` seconds apart."""

    def __init__(self, body: bytes, step: int, pause: float) -> None:
        self.body, self.step, self.pause = body, step, pause
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = int(self.sock.getsockname()[1])
        self.stopped = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                head += f"Content-Length: {len(self.body)}\r\n\r\n"
                conn.sendall(head.encode())
                for start in range(0, len(self.body), self.step):
                    if self.stopped.is_set():
                        return
                    conn.sendall(self.body[start : start + self.step])
                    time.sleep(self.pause)
            except OSError:
                return

    def stop(self) -> None:
        """Stop answering."""
        self.stopped.set()
        self.sock.close()


@pytest.fixture
def dribbling() -> Iterator[RawServer]:
    """Hits padded to 40 bytes, one byte every 0.2 s: 8 s in all, never 1 s without a byte."""
    server = RawServer(HITS.ljust(40), 1, 0.2)
    yield server
    server.stop()


def _endpoint(app: Flask, url: str, timeout: float) -> str:
    """The docids, or the error, of one Try of an endpoint at `url` with `timeout`."""
    with app.app_context():
        test_set = build_test_set("bounds", {"q1": "refund"})
        endpoint = endpoints.add_endpoint(
            test_set, "ep", url, hits="@", id_expr="id", score="score", timeout=timeout
        )
        try:
            return ",".join(hit.docid for hit in endpoints.try_query(endpoint, "refund"))
        except ServiceError as exc:
            return str(exc)


def test_a_slow_trickle_ends_at_the_timeout(app: Flask, dribbling: RawServer) -> None:
    # httpx's timeout bounds each wait for a byte: a server sending one byte every 0.2 s
    # was read for as long as it kept sending. The timeout is the whole exchange's now.
    url = f"http://127.0.0.1:{dribbling.port}/s?q={{query}}"
    start = time.monotonic()
    error = _endpoint(app, url, 1.0)
    assert error == f"no answer from 127.0.0.1:{dribbling.port} within 1 s (timeout)"
    assert time.monotonic() - start < 4  # 1 s, then no retry of a timed-out read's rest


def test_a_judges_slow_trickle_ends_at_its_timeout(
    app: Flask, dribbling: RawServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ndcg_labeler.services.judges.client.BACKOFF", 0.0)
    base = f"http://127.0.0.1:{dribbling.port}/v1"
    start = time.monotonic()
    with app.app_context(), outbound.outbound_client() as client:
        answer = ask(client, JudgeConfig(base, "m", "", 0.0, 8, 1.0, 0), "p", RateLimiter(0))
    assert answer.error == f"no answer from 127.0.0.1:{dribbling.port} within 1 s (timeout)"
    # Five attempts of 1 s each; without the deadline the first alone lasts 8 s.
    assert time.monotonic() - start < 7.5


def test_an_answer_past_the_size_limit_is_refused(app: Flask) -> None:
    body = json.dumps([{"id": f"d{i}", "score": 1.0} for i in range(200)]).encode()
    assert len(body) > 5000
    server = RawServer(body, 1024, 0.0)
    try:
        app.config["NDCG_OUTBOUND_MAX_BYTES"] = 5000
        url = f"http://127.0.0.1:{server.port}/s?q={{query}}"
        assert _endpoint(app, url, 5.0) == (
            f"the answer from 127.0.0.1:{server.port} is larger than 5,000 bytes "
            "(NDCG_OUTBOUND_MAX_MB)"
        )
        app.config["NDCG_OUTBOUND_MAX_BYTES"] = len(body)
        with app.app_context():
            test_set = build_test_set("bounds-ok", {"q1": "refund"})
            endpoint = endpoints.add_endpoint(
                test_set, "ok", url, hits="@", id_expr="id", score="score"
            )
            assert len(endpoints.try_query(endpoint, "refund", k=1000)) == 200
    finally:
        server.stop()


def test_the_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from ndcg_labeler import config

    monkeypatch.setenv("NDCG_OUTBOUND_MAX_MB", "3")
    assert config.from_environment("/tmp")["NDCG_OUTBOUND_MAX_BYTES"] == 3 * 1024 * 1024
    monkeypatch.delenv("NDCG_OUTBOUND_MAX_MB")
    assert config.from_environment("/tmp")["NDCG_OUTBOUND_MAX_BYTES"] == 64 * 1024 * 1024
