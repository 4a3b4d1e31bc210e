"""The endpoint tests' programmable fake search server, with the client's retry pause cut short."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.endpoints.test_endpoint_edges import Programmable


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Programmable]:
    """A fake search server on 127.0.0.1 that answers what the test sets in `answer`."""
    monkeypatch.setattr("ndcg_labeler.services.endpoints.client.BACKOFF", 0.01)
    server = Programmable()
    yield server
    server.stop()
