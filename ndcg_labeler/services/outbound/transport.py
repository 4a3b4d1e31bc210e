"""Where the outbound policy is enforced: the network backend that opens the sockets.

The host is resolved here, every address is checked, and the socket goes to a checked address.
TLS and the Host header still use the name from the URL (httpcore takes them from the request,
not the socket), so there is no gap between the address checked and the address reached for a
DNS answer to change in, and a redirect, were one ever followed, would pass the same check.
Imported on first use only: httpx is one of the libraries start-up does not load.
"""

from __future__ import annotations

from typing import Any

import httpcore
import httpx

from ndcg_labeler.services.outbound.policy import Policy, resolve

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


class CheckedTransport(httpx.HTTPTransport):
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
