"""The JSON API's runs: one page of a test set's runs, uploading one, archiving and tagging it."""

from __future__ import annotations

import os

from flask import g, jsonify, request
from werkzeug.wrappers import Response

from ndcg_labeler.formats import FormatError
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import ServiceError, interop, jobs, live, runs, whole_number
from ndcg_labeler.views import api_json, api_params, interop_requests
from ndcg_labeler.views._run_lists import list_filter
from ndcg_labeler.views.api_access import bp, run_in, visible_test_set

# Runs per page of the API's list unless ?per_page= says otherwise.
PER_PAGE = 50
MAX_PER_PAGE = 200


@bp.get("/testsets/<path:test_set>/runs")
def list_runs(test_set: str) -> Response:
    """One page of the test set's runs: ?q= (name or notes), ?tag=, ?archived=yes|no,
    ?sort=, ?page= and ?per_page=; only the page's runs are scored."""
    found = visible_test_set(test_set)
    try:
        wanted, page = list_filter(request.args, PER_PAGE, MAX_PER_PAGE)
        listed = runs.find_runs(found, wanted)
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    lines = live.listed_scores(listed.runs)
    return jsonify(
        runs=[api_json.run_json(run, lines[run.id]) for run in listed.runs],
        total=listed.total,
        page=page,
        per_page=wanted.limit,
        next_page=page + 1 if listed.has_next else None,
    )


@bp.post("/testsets/<path:test_set>/runs/<path:run>/archive")
def archive_run(test_set: str, run: str) -> Response:
    """Archive a run to its top `keep` entries per query (admins): JSON {"keep": N}."""
    chosen = visible_test_set(test_set)
    if not g.api_user.is_admin:
        return api_params.error(403, "only admins archive runs")
    found = run_in(chosen, run)
    keep = (request.get_json(silent=True) or {}).get("keep")
    if isinstance(keep, bool) or not isinstance(keep, int):
        return api_params.error(400, 'send the depth to keep as JSON: {"keep": N}')
    try:
        dropped = runs.archive_run(found, keep, g.api_user)
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    return jsonify(**api_json.run_json(found), entries_dropped=dropped)


@bp.post("/testsets/<path:test_set>/runs/<path:run>/tags")
def mark_run(test_set: str, run: str) -> Response:
    """Add and remove a run's tags and pin it (admins): JSON {"add": [...], "remove": [...],
    "pinned": true|false}, each optional."""
    chosen = visible_test_set(test_set)
    if not g.api_user.is_admin:
        return api_params.error(403, "only admins tag runs")
    found = run_in(chosen, run)
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not {"add", "remove", "pinned"} & set(body):
        body = {"add": None}  # refused below: nothing to change was sent
    add, remove, pinned = body.get("add", []), body.get("remove", []), body.get("pinned")
    lists_ok = all(
        isinstance(v, list) and all(isinstance(t, str) for t in v) for v in (add, remove)
    )
    if not lists_ok or not (pinned is None or isinstance(pinned, bool)):
        return api_params.error(
            400, 'send JSON {"add": [tags], "remove": [tags], "pinned": true|false}'
        )
    try:
        runs.mark_run(found, add=add, remove=remove, pinned=pinned, actor=g.api_user)
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    return jsonify(**api_json.run_json(found))


@bp.post("/testsets/<path:test_set>/runs")
def upload(test_set: str) -> tuple[Response, int] | Response:
    """Upload a run: multipart `file`, optional `name` (default: the file's name), `depth`,
    `notes` and `series` (admins). With `Prefer: respond-async` the job worker stores it: 202
    with the job, followed at /api/jobs/ID (its result names the run)."""
    return _upload(visible_test_set(test_set))


def _upload(test_set: TestSet) -> tuple[Response, int] | Response:
    if not g.api_user.is_admin:
        return api_params.error(403, "only admins upload runs")
    storage = request.files.get("file")
    if storage is None:
        return api_params.error(400, "send the run file as the multipart field 'file'")
    depth_text = request.form.get("depth", "").strip()
    try:
        depth = whole_number(depth_text, "depth", 1, runs.MAX_DEPTH) if depth_text else None
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    fmt = request.form.get("format", "").strip()
    if fmt not in ("", "quepid-snapshot"):
        return api_params.error(400, f"format must be quepid-snapshot (or left out), not '{fmt}'")
    try:
        name = runs.clean_name(request.form.get("name", ""), storage.filename or "")
        if runs.name_taken(test_set, name):
            return api_params.error(409, f"this test set already has a run named '{name}'")
        notes = request.form.get("notes", "")
        series = request.form.get("series", "")
        if api_params.respond_async() and not fmt:
            filename = os.path.basename(storage.filename or "") or "upload"
            job = jobs.enqueue_upload(
                test_set, storage.stream, filename, name, g.api_user, depth, notes, series
            )
            return api_params.accepted(interop_requests.job_json(job))
        if fmt:  # a Quepid case snapshot: queries named by their text
            file = interop_requests.peer_file(storage)
            run = interop.upload_quepid_snapshot(
                test_set, file, name, g.api_user, depth=depth, notes=notes, series=series
            )
        else:
            filename = os.path.basename(storage.filename or "") or "upload"
            run = runs.upload_run(
                test_set,
                storage.stream,
                filename,
                name,
                g.api_user,
                depth=depth,
                notes=notes,
                series=series,
            )
    except FormatError as exc:
        return api_params.error(400, str(exc), file=exc.filename, line=exc.line, reason=exc.reason)
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    return jsonify(**api_json.run_json(run), report=run.report), 201
