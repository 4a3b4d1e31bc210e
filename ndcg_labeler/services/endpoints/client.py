"""Asking a retriever endpoint for one query: build the request, retry, map the answer."""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any

from ndcg_labeler.formats import Hit, HitsError, Mapping, map_hits
from ndcg_labeler.services import ServiceError, outbound
from ndcg_labeler.services._progress import pause

RETRIES = 3
BACKOFF = 0.5  # seconds before the first retry; doubled each time
_PLACEHOLDER = re.compile(r"\{(query|qid|k)\}")


def fill_headers(headers: dict[str, str]) -> dict[str, str]:
    """The endpoint's headers with their ${NAME} secrets filled in (checked against the rule)."""
    return {name: outbound.fill_secrets(value) for name, value in headers.items()}


def build_request(
    url: str, method: str, body: str, headers: dict[str, str], query: str, qid: str, k: int
) -> tuple[str, dict[str, str], Any]:
    """(URL, headers as given, JSON body or None) for one query: placeholders filled, escaped."""
    filled_url = _fill(
        url,
        {"query": urllib.parse.quote(query, safe=""), "qid": urllib.parse.quote(qid, safe="")},
        k,
    )
    payload = None
    if method == "POST":
        # Inside a JSON string: escaped as JSON escapes it, without the quotes.
        payload = json.loads(
            _fill(body, {"query": json.dumps(query)[1:-1], "qid": json.dumps(qid)[1:-1]}, k)
        )
    return filled_url, headers, payload


def _fill(template: str, values: dict[str, str], k: int) -> str:
    """The template with {query}, {qid} and {k} filled in one pass, so that a query holding the
    text '{k}' or '{qid}' is sent as it is, not filled in again."""
    values = {**values, "k": str(k)}
    return _PLACEHOLDER.sub(lambda found: values[found.group(1)], template)


def ask(
    client: Any,
    request: tuple[str, dict[str, str], Any],
    method: str,
    mapping: Mapping,
    timeout: float,
    retries: int = RETRIES,
) -> list[Hit]:
    """The mapped hits of one request; ServiceError with what went wrong (after `retries`).

    A request the outbound policy refuses is not retried: OutboundRefused goes straight up.
    """
    import httpx

    url, headers, payload = request
    error = ""
    for attempt in range(retries + 1):
        response = None
        try:
            if method == "POST":
                response = client.post(url, json=payload, headers=headers, timeout=timeout)
            else:
                response = client.get(url, headers=headers, timeout=timeout)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            error = outbound.failure(exc, url, timeout)
        else:
            if response.status_code == 200:
                try:
                    document = response.json()
                except ValueError as exc:
                    raise ServiceError(f"the endpoint's answer is not JSON ({exc})") from None
                try:
                    return map_hits(document, mapping)
                except HitsError as exc:
                    raise ServiceError(str(exc)) from None
            error = outbound.status_line(response)
            if response.is_redirect:
                # Not followed (outbound_client), and where to is not repeated: errors never
                # carry the other side's words (docs/operator-guide/security.md).
                error += ": a redirect, which is not followed: give the URL it leads to"
            if response.status_code != 429 and response.status_code < 500:
                break
        if attempt < retries:
            pause(BACKOFF * 2**attempt)
    raise ServiceError(error)
