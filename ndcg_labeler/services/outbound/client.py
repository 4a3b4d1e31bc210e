"""The one HTTP client for requests made on an admin's behalf, and how their failures read."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable
from typing import TYPE_CHECKING

from flask import current_app

from ndcg_labeler.services.outbound.policy import OutboundRefused, current_policy

if TYPE_CHECKING:
    import httpx


DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""The longest answer a request on an admin's behalf may bring (NDCG_OUTBOUND_MAX_MB): a search
endpoint's 1,000 hits or a judge's answer is a few MB at most."""


def outbound_client(also_own: Iterable[str] = ()) -> httpx.Client:
    """An httpx client under the current policy (`also_own`: more 'host:port' names of the app).

    Redirects are not followed and proxies from the environment are not used: a proxy would
    connect on the server's behalf where the policy cannot see.
    """
    import httpx

    from ndcg_labeler.services.outbound.transport import CheckedTransport

    checked = current_policy(also_own)
    limit = current_app.config.get("NDCG_OUTBOUND_MAX_BYTES") or DEFAULT_MAX_BYTES
    return httpx.Client(
        transport=CheckedTransport(checked, limit), follow_redirects=False, trust_env=False
    )


def failure(exc: Exception, url: str, timeout: float) -> str:
    """What went wrong with a request, never telling a closed port from a filtered or silent one."""
    import httpx

    from ndcg_labeler.services.outbound.transport import ResponseTooLarge

    if isinstance(exc, OutboundRefused):
        return str(exc)
    origin = _origin(url)
    if isinstance(exc, ResponseTooLarge):
        return f"the answer from {origin} is {exc}"
    if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
        return f"no answer from {origin} within {timeout:g} s (timeout)"
    # Closed, filtered, or open but not speaking HTTP: one message, or the server is a scanner.
    return f"could not connect to {origin}"


def status_line(response: httpx.Response) -> str:
    """'HTTP 503 Service Unavailable': never the body, which may be another service's page."""
    return f"HTTP {response.status_code} {response.reason_phrase}".rstrip()


def _origin(url: str) -> str:
    try:
        parsed = urllib.parse.urlsplit(url)
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except ValueError:
        return "the server"
    host = parsed.hostname or "the server"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
