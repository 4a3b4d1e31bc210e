"""Reading the JSON API's parameters and answering its errors: one JSON object or form fields
in, `{"error": ...}` with a status out (the api_* route modules and their helpers share them)."""

from __future__ import annotations

from typing import Any

from flask import abort, jsonify, request
from werkzeug.wrappers import Response

from ndcg_labeler.services import ServiceError, gate, whole_number


def error(status: int, detail: str, **extra: Any) -> Response:
    """A JSON error response."""
    names = {
        400: "Bad Request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not Found",
        409: "Conflict",
        429: "Too Many Requests",
    }
    response = jsonify(error=names.get(status, "Error"), detail=detail, **extra)
    response.status_code = status
    return response


def respond_async() -> bool:
    """Whether the request asks for the work to be done in the background (RFC 7240's
    `Prefer: respond-async`): a long import or upload then answers 202 with its job at once,
    instead of holding the request past the web server's timeout."""
    for header in request.headers.getlist("Prefer"):
        for preference in header.split(","):
            if preference.split(";", 1)[0].split("=", 1)[0].strip().lower() == "respond-async":
                return True
    return False


def accepted(job_json: dict[str, Any]) -> tuple[Response, int]:
    """202 with the queued job (followed at its `url`), saying the preference was applied."""
    response = jsonify(job=job_json)
    response.headers["Preference-Applied"] = "respond-async"
    return response, 202


def params() -> dict[str, Any]:
    """The parameters from a JSON object or form fields (400 on a malformed body)."""
    if request.is_json:
        body = request.get_json()  # malformed or too deeply nested: 400 saying why
        if not isinstance(body, dict):
            abort(error(400, "send the parameters as one JSON object"))
        return body
    params: dict[str, Any] = {key: request.form.get(key) for key in request.form}
    if "measure" in request.form:
        params["measure"] = request.form.getlist("measure")
    return params


def text(params: dict[str, Any], key: str, default: str | None = None) -> str:
    """A string parameter (`default` when absent; 400 when missing and required, or not text)."""
    value = params.get(key, default)
    if value is None:
        abort(error(400, f"'{key}' is required"))
    if not isinstance(value, str):
        abort(error(400, f"'{key}' must be a string"))
    return value


def number(params: dict[str, Any], key: str, default: float) -> float:
    """A number parameter (JSON number or form text; 400 when it is not one)."""
    value = params.get(key, default)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            abort(error(400, f"'{key}' must be a number, not '{value}'"))
    if isinstance(value, bool) or not isinstance(value, int | float):
        abort(error(400, f"'{key}' must be a number"))
    return float(value)


YES = ("1", "true", "on", "yes")
NO = ("", "0", "false", "off", "no")


def flag(params: dict[str, Any], key: str) -> bool:
    """A yes/no form field (absent: no); 400 for any other text, which a silent no would turn
    into the opposite of what was asked."""
    value = params.get(key)
    if isinstance(value, bool):
        return value
    if not isinstance(value, str | None):
        abort(error(400, f"'{key}' must be true or false"))
    word = (value or "").strip().lower()
    if word not in YES + NO:
        abort(error(400, f"'{key}' must be true or false (1, on, yes / 0, off, no), not '{value}'"))
    return word in YES


def measures(params: dict[str, Any]) -> list[str]:
    """The `measure` parameter as a list of names (default: the gate's)."""
    value = params.get("measure", list(gate.DEFAULT_MEASURES))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        abort(error(400, "'measure' must be a string or a list of strings"))
    return value


def whole(params: dict[str, Any], key: str, *, required: bool) -> int | None:
    """A whole-number parameter (JSON number or form text); 400 when malformed or missing."""
    value = params.get(key)
    if value is None or value == "":
        if required:
            abort(error(400, f"'{key}' is required"))
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        abort(error(400, f"'{key}' must be a whole number"))
    try:  # a JSON number goes through the same check as form text: no sign, no overflow
        return whole_number(str(value), f"'{key}'")
    except ServiceError as exc:
        abort(error(400, str(exc)))
