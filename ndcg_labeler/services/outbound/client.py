"""The one HTTP client for requests made on an admin's behalf, checked where it connects.

The check sits in httpcore's network backend, the place that opens sockets: the host is
resolved there, every address is checked, and the socket goes to a checked address. TLS and
the Host header still use the name from the URL (httpcore takes them from the request, not the
socket), so there is no gap between the address checked and the address reached for a DNS
answer to change in, and a redirect, were one ever followed, would pass the same check.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from ndcg_labeler.services.outbound.policy import OutboundRefused, Policy, current_policy, resolve

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
                return super().connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # choose() never returns an empty list
        raise failure


class _CheckedTransport(httpx.HTTPTransport):
    """httpx's transport over a connection pool whose sockets come from the checked backend."""

    def __init__(self, policy: Policy) -> None:
        super().__init__(trust_env=False)
        # httpx has no setting for the network backend, so the pool it built is replaced by an
        # identical one that has ours (httpx==0.28.1 is pinned in requirements.txt).
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=_LIMITS.max_connections,
            max_keepalive_connections=_LIMITS.max_keepalive_connections,
            keepalive_expiry=_LIMITS.keepalive_expiry,
            network_backend=_CheckedBackend(policy),
        )


def outbound_client(also_own: Iterable[str] = ()) -> httpx.Client:
    """An httpx client under the current policy (`also_own`: more 'host:port' names of the app).

    Redirects are not followed and proxies from the environment are not used: a proxy would
    connect on the server's behalf where the policy cannot see.
    """
    checked = current_policy(also_own)
    return httpx.Client(
        transport=_CheckedTransport(checked), follow_redirects=False, trust_env=False
    )


def failure(exc: Exception, url: str, timeout: float) -> str:
    """What went wrong with a request, never telling a closed port from a filtered or silent one."""
    if isinstance(exc, OutboundRefused):
        return str(exc)
    origin = _origin(url)
    if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
        return f"no answer from {origin} within {timeout:g} s (timeout)"
    # Closed, filtered, or open but not speaking HTTP: one message, or the server is a scanner.
    return f"could not connect to {origin}"


def status_line(response: httpx.Response) -> str:
    """'HTTP 503 Service Unavailable': never the body, which may be another service's page."""
    return f"HTTP {response.status_code} {response.reason_phrase}".rstrip()


def _origin(url: str) -> str:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return "the server"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return f"{host}:{port}"
