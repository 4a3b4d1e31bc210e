"""Where the outbound policy is enforced: the network backend that opens the sockets.

The host is resolved here, every address is checked, and the socket goes to a checked address.
TLS and the Host header still use the name from the URL (httpcore takes them from the request,
not the socket), so there is no gap between the address checked and the address reached for a
DNS answer to change in, and a redirect, were one ever followed, would pass the same check.
Imported on first use only: httpx is one of the libraries start-up does not load.

Each request also has bounds of its own here, where every byte passes: its timeout is a deadline
for the whole exchange (httpx's bounds each step, so a server sending a byte a second would
hold a worker for ever), and its answer may not exceed NDCG_OUTBOUND_MAX_MB.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

from ndcg_labeler.services.outbound.policy import Policy, resolve

# When the request being served must be over (time.monotonic()); None: no deadline. Per thread,
# so a judge's concurrent requests each keep their own.
_deadline: ContextVar[float | None] = ContextVar("outbound_deadline", default=None)


class ResponseTooLarge(httpx.TransportError):
    """An answer longer than the outbound size limit: read no further."""

    def __init__(self, limit: int) -> None:
        mb = limit / (1024 * 1024)
        size = f"{mb:g} MB" if mb >= 1 else f"{limit:,} bytes"
        super().__init__(f"larger than {size} (NDCG_OUTBOUND_MAX_MB)")
        self.limit = limit


def _left(timeout: float | None) -> float | None:
    """`timeout`, cut to what is left before the request's deadline; ReadTimeout past it."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the request's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket whose every wait ends by the deadline of the request using it."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Up to `max_bytes`, waiting no later than the deadline."""
        return self._stream.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """All of `buffer`, waiting no later than the deadline."""
        self._stream.write(buffer, _left(timeout))

    def close(self) -> None:
        """Close the socket."""
        self._stream.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        """The TLS stream over this one, its handshake bounded by the deadline too."""
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        """What the underlying stream knows (the peer's address, the TLS object…)."""
        return self._stream.get_extra_info(info)


class _BoundedBody(httpx.SyncByteStream):
    """An answer's body read under its request's deadline, refused past `limit` bytes."""

    def __init__(self, body: Any, deadline: float | None, limit: int) -> None:
        self._body, self._deadline, self._limit = body, deadline, limit

    def __iter__(self) -> Iterator[bytes]:
        """The body's chunks, the deadline in force while each is read."""
        chunks, seen = iter(self._body), 0
        while True:
            token = _deadline.set(self._deadline)
            try:
                chunk = next(chunks, None)
            finally:
                _deadline.reset(token)
            if chunk is None:
                return
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLarge(self._limit)
            yield chunk

    def close(self) -> None:
        """Close the underlying body (and give its connection back)."""
        self._body.close()


# httpx's own pool limits (HTTPTransport's defaults).
_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)


class _CheckedBackend(httpcore.SyncBackend):
    """Resolve, check against the policy, connect to a checked address."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        """A stream to the first allowed address of `host` that answers."""
        addresses = self.policy.choose(host, port, resolve(host, port))
        failure: Exception | None = None
        for address in addresses:
            try:
                return _DeadlineStream(
                    super().connect_tcp(
                        str(address), port, _left(timeout), local_address, socket_options
                    )
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # choose() never returns an empty list
        raise failure


class CheckedTransport(httpx.HTTPTransport):
    """httpx's transport over a connection pool whose sockets come from the checked backend."""

    def __init__(self, policy: Policy, max_bytes: int) -> None:
        super().__init__(trust_env=False)
        self.max_bytes = max_bytes
        # httpx has no setting for the network backend, so the pool it built is replaced by an
        # identical one that has ours (httpx==0.28.1 is pinned in requirements.txt).
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=_LIMITS.max_connections,
            max_keepalive_connections=_LIMITS.max_keepalive_connections,
            keepalive_expiry=_LIMITS.keepalive_expiry,
            network_backend=_CheckedBackend(policy),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request`: its longest timeout is the deadline of the whole exchange, body
        included, and a body over `max_bytes` is refused as it arrives."""
        timeouts = [t for t in request.extensions.get("timeout", {}).values() if t is not None]
        deadline = time.monotonic() + max(timeouts) if timeouts else None
        token = _deadline.set(deadline)
        try:
            response = super().handle_request(request)
        finally:
            _deadline.reset(token)
        response.stream = _BoundedBody(response.stream, deadline, self.max_bytes)
        return response
