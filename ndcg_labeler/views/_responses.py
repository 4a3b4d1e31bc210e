"""Answers shared by downloads: a text attachment, and 202 "still computing, ask again" for
scripts and browsers."""

from __future__ import annotations

import json

from flask import Response


def download(body: str, filename: str, mimetype: str) -> Response:
    """A text attachment (UTF-8)."""
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def still_computing(detail: str, retry_after: int) -> Response:
    """202 with Retry-After and a JSON body saying what is being computed.

    For downloads whose figures are computed in the background: the request never waits for
    them, and a script (curl, the API's users) knows to ask again."""
    body = json.dumps({"status": "computing", "detail": detail}, ensure_ascii=False) + "\n"
    response = Response(body, status=202, mimetype="application/json")
    response.headers["Retry-After"] = str(retry_after)
    return response
