"""JSON API authenticated by personal tokens (`Authorization: Bearer ...`): upload and score runs.

No session and no CSRF (a bearer token is not sent by browsers on their own); 401 without a
valid token (429 after too many wrong ones from one address), 404 for test sets the token's
owner may not see, 403 for non-admins uploading.
"""

from __future__ import annotations

import os
from typing import Any

from flask import Blueprint, abort, g, jsonify, request, url_for
from werkzeug.wrappers import Response

from ndcg_labeler import throttle
from ndcg_labeler.extensions import csrf, db
from ndcg_labeler.formats import FormatError
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.accounts import can_view, user_for_token
from ndcg_labeler.services.scores import ScoreOptions, score_run

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
    user = user_for_token(token.strip()) if presented else None
    if user is None:
        if presented:  # a wrong, revoked or foreign-looking token: a guess, counted
            throttle.failed(throttle.API_TOKEN, keys)
        response = _error(401, "send a valid personal API token: Authorization: Bearer <token>")
        response.headers["WWW-Authenticate"] = 'Bearer realm="ndcg-labeler"'
        return response
    g.api_user = user
    return None


def _test_set(test_set_id: int) -> TestSet:
    """The test set if the token's owner may see it; else 404 (hidden ids stay hidden)."""
    test_set = db.session.get(TestSet, test_set_id)
    if test_set is None or not can_view(g.api_user, test_set):
        abort(_error(404, "no such test set"))
    return test_set


def _run(test_set: TestSet, run_id: int) -> Run:
    run = run_service.get_run(test_set, run_id)
    if run is None:
        abort(_error(404, "no such run in this test set"))
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
            "api.scores", test_set_id=run.test_set_id, run_id=run.id, _external=True
        ),
    }


@bp.get("/testsets/<int:test_set_id>/runs")
def list_runs(test_set_id: int) -> Response:
    """The test set's runs."""
    test_set = _test_set(test_set_id)
    return jsonify(runs=[_run_json(run) for run in run_service.list_runs(test_set)])


@bp.post("/testsets/<int:test_set_id>/runs")
def upload(test_set_id: int) -> tuple[Response, int] | Response:
    """Upload a run: multipart `file` and `name`, optional `depth` and `notes` (admins)."""
    test_set = _test_set(test_set_id)
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
        name = run_service.clean_name(request.form.get("name", ""))
        if run_service.name_taken(test_set, name):
            return _error(409, f"this test set already has a run named '{name}'")
        run = run_service.upload_run(
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


@bp.get("/testsets/<int:test_set_id>/runs/<int:run_id>/scores")
def scores(test_set_id: int, run_id: int) -> Response:
    """The run's current scores: the same JSON as `flask run score --json`."""
    run = _run(_test_set(test_set_id), run_id)
    k_text = request.args.get("k", "10")
    try:
        options = ScoreOptions(
            k=int(k_text),
            gain=request.args.get("gain") or "linear",
            ideal=request.args.get("ideal") or "judged",
        ).checked()
    except ServiceError as exc:
        return _error(400, str(exc))
    except ValueError:  # int() of the k text (ServiceError, a ValueError too, is caught above)
        return _error(400, f"k must be a whole number, not '{k_text}'")
    return jsonify(score_run(run, options).to_json())
