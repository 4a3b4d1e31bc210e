"""The client's connection to the server: the token, the HTTP session and its timeouts, and
every refusal (the server's, a redirect, a dead or slow connection) as `ClientError`."""

from __future__ import annotations

import email.utils
import html
import os
import re
import time
from collections.abc import Mapping
from typing import Any, Self

import httpx

_COPY = "copy it again from the Account page"
_OWN_ADDRESS = "give Client the server's own address (https, or the path the app is served under)"
# The longest single wait a Retry-After may ask of the client (a longer one: this long).
_MAX_RETRY_AFTER = 60.0


class ClientError(Exception):
    """What the server (or the connection) refused, with the server's message and status."""

    def __init__(self, message: str, status: int | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.details = details


class Connection:
    """One server's /api/, authenticated with a personal token; the Client's areas build on it."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
        computing_timeout: float = 300.0,
    ) -> None:
        """`url`: the server's base address; `token`: from its Account page (or NDCG_TOKEN);
        `computing_timeout`: how long, in seconds, a read answered "202, still computing, ask
        again after Retry-After" is asked again before ClientError."""
        # Stripped: a token read from a file or `$(cat ...)` often keeps its line break.
        token = (token or os.environ.get("NDCG_TOKEN") or "").strip()
        if not token:
            raise ClientError("give a personal API token (the Account page), or set NDCG_TOKEN")
        if any(c.isspace() or not c.isprintable() for c in token):  # never echoed: a secret
            raise ClientError(f"the API token has a blank or a line break inside: {_COPY}")
        self._http = httpx.Client(
            base_url=url.rstrip("/") + "/api/",
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )
        self._address = url.rstrip("/")
        self._computing_timeout = computing_timeout

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._send("get", path, params=params)

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The server's response, or ClientError when the connection fails or times out; a
        read answered 202 with Retry-After (figures still being computed) is asked again after
        the wait it names, until `computing_timeout` seconds have passed."""
        deadline = time.monotonic() + self._computing_timeout
        while True:
            response = self._once(method, path, **kwargs)
            wait = _still_computing(method, response)
            if wait is None:
                return response
            left = deadline - time.monotonic()
            if left <= 0:
                detail = _detail(response) or "no reason given"
                raise ClientError(
                    f"the server was still computing after {self._computing_timeout:g} s "
                    f"({detail}); give Client a larger computing_timeout=",
                    response.status_code,
                )
            time.sleep(min(wait, left))

    def _once(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request's response, or ClientError when the connection fails or times out."""
        try:
            return self._http.request(method, path, **kwargs)
        except (httpx.ReadTimeout, httpx.WriteTimeout) as exc:  # reached but slow: not "down"
            raise ClientError(
                f"the server did not answer within {self._http.timeout.read} s "
                f"({type(exc).__name__}): it may still be working; give Client a larger timeout="
            ) from exc
        except httpx.HTTPError as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__  # one line, for CI logs
            raise ClientError(f"could not reach the server at {self._address}: {reason}") from exc

    def _text(self, path: str, params: dict[str, Any], method: str = "get", **kwargs: Any) -> str:
        """A download's text; the server's JSON error as ClientError."""
        response = self._request(method, path, params=params, **kwargs)
        if response.is_error or response.is_redirect:
            _raise(response)
        return response.text

    def _send(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self._request(method, path, **kwargs)
        if response.is_error or response.is_redirect:
            _raise(response)
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise ClientError("the server's answer is not a JSON object", response.status_code)
        return body


def _still_computing(method: str, response: httpx.Response) -> float | None:
    """The seconds to wait before asking again when a read was answered 202 with Retry-After
    (figures computed in the background); None for any other answer (a job's 202 included)."""
    if method.lower() != "get" or response.status_code != 202:
        return None
    given = response.headers.get("Retry-After", "").strip()
    if not given:
        return None
    try:
        seconds = float(given)
    except ValueError:  # an HTTP date
        try:
            seconds = email.utils.parsedate_to_datetime(given).timestamp() - time.time()
        except (TypeError, ValueError):
            seconds = 1.0
    return min(max(seconds, 0.1), _MAX_RETRY_AFTER)


def _detail(response: httpx.Response) -> str | None:
    """The "detail" of the server's JSON answer, if it has one."""
    try:
        body = response.json()
    except ValueError:
        return None
    return str(body["detail"]) if isinstance(body, dict) and body.get("detail") else None


def _raise(response: httpx.Response) -> None:
    """Raise the server's refusal: its JSON "detail" and the other keys, else the status."""
    if response.is_redirect:  # not followed: a token must not travel to another address
        where = response.headers.get("Location", "?")
        raise ClientError(f"the server redirected to {where}: {_OWN_ADDRESS}", response.status_code)
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("detail"):
        details = {k: v for k, v in body.items() if k not in ("error", "detail")}
        raise ClientError(str(body["detail"]), response.status_code, details or None)
    said = f"the server answered HTTP {response.status_code} {response.reason_phrase}"
    words = _page_words(response.text)
    raise ClientError(f"{said}: {words}" if words else said, response.status_code)


def _page_words(text: str, limit: int = 200) -> str:
    """The words of an error page that is not the API's JSON (a proxy's HTML, a plain-text
    refusal): its text without markup, on one line, at most `limit` characters."""
    text = re.sub(r"<!--.*?-->|<(script|style)\b.*?</\1>", " ", text, flags=re.S | re.I)
    words = " ".join(html.unescape(re.sub(r"<[^>]*>", " ", text)).split())
    return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"


def named(value: str | int) -> str:
    """A test set or run as the server reads a reference: an int is an id, sent as `id:N` so
    that it is never read as another's name; a str goes as it is."""
    return f"id:{value}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def ref(value: str | int) -> str:
    """A test set or run named by id or name (see `named`), as a path segment."""
    from urllib.parse import quote

    return quote(named(value), safe="")


def query_params(options: Mapping[str, Any]) -> dict[str, str]:
    """Extra query parameters as the server reads them: booleans as true/false."""
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
