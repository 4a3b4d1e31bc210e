"""The client's connection to the server: the token, the HTTP session and its timeouts, and
every refusal (the server's, a redirect, a dead or slow connection) as `ClientError`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Self

import httpx

_COPY = "copy it again from the Account page"
_OWN_ADDRESS = "give Client the server's own address (https, or the path the app is served under)"


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
    ) -> None:
        """`url`: the server's base address; `token`: from its Account page (or NDCG_TOKEN)."""
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
        """The server's response, or ClientError when the connection fails or times out."""
        try:
            return self._http.request(method, path, **kwargs)
        except (httpx.ReadTimeout, httpx.WriteTimeout) as exc:  # reached but slow: not "down"
            raise ClientError(
                f"the server did not answer within {self._http.timeout.read} s "
                f"({type(exc).__name__}): it may still be working; give Client a larger timeout="
            ) from exc
        except httpx.HTTPError as exc:
            raise ClientError(f"could not reach the server: {exc}") from exc

    def _text(self, path: str, params: dict[str, Any]) -> str:
        """A download's text; the server's JSON error as ClientError."""
        response = self._request("get", path, params=params)
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
    raise ClientError(
        f"the server answered HTTP {response.status_code} {response.reason_phrase}",
        response.status_code,
    )


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
