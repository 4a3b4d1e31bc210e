"""JSON API authenticated by personal tokens (`Authorization: Bearer ...`): runs, scores, gate.

No session and no CSRF (a bearer token is not sent by browsers on their own); 401 without a
valid token (429 after too many wrong ones from one address), 404 for test sets the token's
owner may not see, 403 for non-admins uploading.
Test sets and runs are addressed by id or by name (an all-digit reference is an id first).
The OpenAPI document (views/openapi_spec.py) describes every route here.
"""

from __future__ import annotations

import os
from typing import Any

from flask import Blueprint, abort, g, jsonify, request, url_for
from werkzeug.wrappers import Response

from ndcg_labeler import throttle
from ndcg_labeler.formats import FormatError
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import ServiceError, accounts, gate, live, runs, testsets
from ndcg_labeler.web_extensions import csrf

bp = Blueprint("api", __name__, url_prefix="/api")
csrf.exempt(bp)


def _error(status: int, detail: str, **extra: Any) -> Response:
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


@bp.before_request
def authenticate() -> Response | None:
    """Find the user of the bearer token; 401 when there is none or it is not valid."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    presented = scheme.lower() == "bearer" and bool(token.strip())
    keys = throttle.token_keys()
    if presented:
        refusal = throttle.refused(throttle.API_TOKEN, keys)
        if refusal is not None:
            response = _error(
                429,
                f"too many failed API tokens from this address; try again in "
                f"{refusal.retry_after} s ({refusal.retry_at})",
                retry_after=refusal.retry_after,
            )
            response.headers["Retry-After"] = str(refusal.retry_after)
            return response
    user = accounts.user_for_token(token.strip()) if presented else None
    if user is None:
        if presented:  # a wrong, revoked or foreign-looking token: a guess, counted
            throttle.failed(throttle.API_TOKEN, keys)
        response = _error(401, "send a valid personal API token: Authorization: Bearer <token>")
        response.headers["WWW-Authenticate"] = 'Bearer realm="ndcg-labeler"'
        return response
    g.api_user = user
    return None


def _test_set(ref: str) -> TestSet:
    """The test set (id or name) if the token's owner may see it; else 404 (hidden stays hidden)."""
    test_set = testsets.get_by_ref(ref)
    if test_set is None or not accounts.can_view(g.api_user, test_set):
        abort(_error(404, "no such test set"))
    return test_set


def _run(test_set: TestSet, ref: str) -> Run:
    """The test set's run (id or name); else 404."""
    run = runs.get_run_by_ref(test_set, ref)
    if run is None:
        abort(_error(404, f"test set '{test_set.name}' has no run '{ref}'"))
    return run


def _run_json(run: Run) -> dict[str, Any]:
    return {
        "id": run.id,
        "name": run.name,
        "filename": run.filename,
        "format": run.format,
        "sha256": run.sha256,
        "depth": run.depth,
        "num_queries": run.num_queries,
        "num_entries": run.num_entries,
        "uploaded_at": run.uploaded_at.isoformat(),
        "notes": run.notes,
        "scores_url": url_for(
            "api.scores", test_set=str(run.test_set_id), run=str(run.id), _external=True
        ),
        **_mean_json(run),
    }


def _mean_json(run: Run) -> dict[str, Any]:
    """The run's mean NDCG@10 under the default options, with n and its 95% t interval."""
    result = live.score_run(run)
    return {
        "k": result.k,
        "mean_ndcg": result.mean_ndcg,
        **result.interval_json(),
        **result.means_json(),
    }


@bp.get("/testsets/<test_set>/runs")
def list_runs(test_set: str) -> Response:
    """The test set's runs."""
    found = _test_set(test_set)
    return jsonify(runs=[_run_json(run) for run in runs.list_runs(found)])


@bp.post("/testsets/<test_set>/runs")
def upload(test_set: str) -> tuple[Response, int] | Response:
    """Upload a run: multipart `file`, optional `name` (default: the file's name), `depth` and
    `notes` (admins)."""
    return _upload(_test_set(test_set))


def _upload(test_set: TestSet) -> tuple[Response, int] | Response:
    if not g.api_user.is_admin:
        return _error(403, "only admins upload runs")
    storage = request.files.get("file")
    if storage is None:
        return _error(400, "send the run file as the multipart field 'file'")
    depth_text = request.form.get("depth", "").strip()
    try:
        depth = int(depth_text) if depth_text else None
    except ValueError:
        return _error(400, f"depth must be a whole number, not '{depth_text}'")
    try:
        name = runs.clean_name(request.form.get("name", ""), storage.filename or "")
        if runs.name_taken(test_set, name):
            return _error(409, f"this test set already has a run named '{name}'")
        run = runs.upload_run(
            test_set,
            storage.stream,
            os.path.basename(storage.filename or "") or "upload",
            name,
            g.api_user,
            depth=depth,
            notes=request.form.get("notes", ""),
        )
    except FormatError as exc:
        return _error(400, str(exc), file=exc.filename, line=exc.line, reason=exc.reason)
    except ServiceError as exc:
        return _error(400, str(exc))
    return jsonify(**_run_json(run), report=run.report), 201


@bp.get("/testsets/<test_set>/runs/<run>/scores")
def scores(test_set: str, run: str) -> Response:
    """The run's current scores: the same JSON as `flask run score --json`."""
    chosen = _test_set(test_set)
    if not accounts.grades_visible(g.api_user, chosen):  # per-query figures, as on the pages
        return _error(403, "this test set is judged blind: per-query scores are for admins")
    found = _run(chosen, run)
    try:
        options = live.parse_options(request.args)
    except ServiceError as exc:
        return _error(400, str(exc))
    return jsonify(live.score_run(found, options).to_json())


def _gate_params() -> dict[str, Any]:
    """The gate's parameters from a JSON object or form fields (400 on a malformed body)."""
    if request.is_json:
        body = request.get_json()  # malformed or too deeply nested: 400 saying why
        if not isinstance(body, dict):
            abort(_error(400, "send the gate's parameters as one JSON object"))
        return body
    params: dict[str, Any] = {key: request.form.get(key) for key in request.form}
    if "measure" in request.form:
        params["measure"] = request.form.getlist("measure")
    return params


def _text(params: dict[str, Any], key: str, default: str | None = None) -> str:
    value = params.get(key, default)
    if value is None:
        abort(_error(400, f"'{key}' is required"))
    if not isinstance(value, str):
        abort(_error(400, f"'{key}' must be a string"))
    return value


def _number(params: dict[str, Any], key: str, default: float) -> float:
    value = params.get(key, default)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            abort(_error(400, f"'{key}' must be a number, not '{value}'"))
    if isinstance(value, bool) or not isinstance(value, int | float):
        abort(_error(400, f"'{key}' must be a number"))
    return float(value)


def _measures(params: dict[str, Any]) -> list[str]:
    value = params.get("measure", list(gate.DEFAULT_MEASURES))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        abort(_error(400, "'measure' must be a string or a list of strings"))
    return value


@bp.post("/testsets/<test_set>/gate")
def gate_check(test_set: str) -> Response:
    """The release gate: does `candidate` pass, fail or stay open against `baseline`?"""
    found = _test_set(test_set)
    fmt = request.args.get("format", "json")
    if fmt not in ("json", "junit", "markdown"):
        return _error(400, f"format must be json, junit or markdown, not '{fmt}'")
    params = _gate_params()
    baseline = _run(found, _text(params, "baseline"))
    candidate = _run(found, _text(params, "candidate"))
    try:
        result = gate.run_gate(
            found,
            baseline,
            candidate,
            measures=_measures(params),
            max_drop=_number(params, "max_drop", gate.DEFAULT_MAX_DROP),
            alpha=_number(params, "alpha", 0.05),
            labels=_text(params, "labels", "human"),
        )
    except ServiceError as exc:
        return _error(400, str(exc))
    if fmt == "junit":
        return Response(gate.junit_xml(result), mimetype="application/xml")
    if fmt == "markdown":
        return Response(gate.markdown(result), mimetype="text/markdown")
    return jsonify(result.to_json())
