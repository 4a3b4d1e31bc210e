"""The JSON API's files in and out: imports (a large ir_datasets one as a job, followed at
/api/jobs/ID), and a test set or a run in a peer's shape."""

from __future__ import annotations

import os

from flask import g, jsonify, request
from werkzeug.datastructures import FileStorage
from werkzeug.wrappers import Response

from ndcg_labeler.formats import FormatError
from ndcg_labeler.models import Job, TestSet
from ndcg_labeler.services import ServiceError, accounts, imports, interop, jobs, whole_number
from ndcg_labeler.views import api_params, interop_requests
from ndcg_labeler.views._responses import download
from ndcg_labeler.views.api_access import bp, run_in, visible_test_set


@bp.post("/testsets/<path:test_set>/import")
def import_files(test_set: str) -> tuple[Response, int] | Response:
    """Import multipart files `queries`, `corpus`, `pool` and/or `qrels` (admins), all or
    nothing, as the import page does; optional `source` names the qrels' source, and
    `only_referenced` (true/1) keeps only the corpus chunks the pools, qrels and runs name. Or
    one peer's file (`quepid`, `srw_judgments`, `srw_queries`, with `rating_map`) or
    `ir_datasets` NAME; a large dataset is imported by the job worker: 202 with the job,
    followed at /api/jobs/ID. With `Prefer: respond-async` every import is a job."""
    chosen = visible_test_set(test_set)
    if not g.api_user.is_admin:
        return api_params.error(403, "only admins import files")
    files = {
        kind: imports.ImportFile(storage.stream, os.path.basename(storage.filename or kind))
        for kind in ("queries", "corpus", "pool", "qrels")
        if (storage := request.files.get(kind)) is not None
    }
    peers = {f: s for f in interop_requests.PEER_FIELDS if (s := request.files.get(f))}
    dataset = request.form.get("ir_datasets", "").strip()
    source = request.form.get("source") or None
    only = api_params.flag(request.form.to_dict(), "only_referenced")
    try:
        interop_requests.check_rating_map(request.form.get("rating_map"), peers)
        if api_params.respond_async():
            queued = _later(chosen, files, peers, dataset, source, only)
            return api_params.accepted(interop_requests.job_json(queued))
        queued = interop_requests.dataset_later(
            chosen, peers, dataset, bool(files), source=source, user=g.api_user
        )
        if queued is not None:
            return jsonify(job=interop_requests.job_json(queued)), 202
        if peers or dataset:
            report = interop_requests.import_peer(
                chosen,
                peers,
                dataset,
                bool(files),
                rating_map=request.form.get("rating_map"),
                source=source,
                actor_id=g.api_user.id,
            )
        else:
            report = imports.import_files(
                chosen, **files, source=source, actor_id=g.api_user.id, only_referenced=only
            )
    except FormatError as exc:
        return api_params.error(400, str(exc), file=exc.filename, line=exc.line, reason=exc.reason)
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    return jsonify(interop_requests.report_json(report)), 201


def _later(
    test_set: TestSet,
    files: dict[str, imports.ImportFile],
    peers: dict[str, FileStorage],
    dataset: str,
    source: str | None,
    only_referenced: bool,
) -> Job:
    """The import of this request as a job (`Prefer: respond-async`), whatever its size."""
    if peers or dataset:
        if len(peers) + bool(dataset) != 1 or files:
            raise ServiceError(interop_requests.ALONE)
        if dataset:
            return jobs.enqueue_ir_dataset(test_set, dataset, source, g.api_user)
        field, storage = next(iter(peers.items()))
        return interop_requests.peer_later(
            test_set,
            interop_requests.PEER_FIELDS[field],
            storage,
            rating_map=request.form.get("rating_map"),
            source=source,
            user=g.api_user,
        )
    return jobs.enqueue_import(
        test_set,
        {name: (f.filename, f.source) for name, f in files.items()},  # type: ignore[misc]
        source,
        g.api_user,
        only_referenced=only_referenced,
    )


@bp.get("/jobs/<job_id>")
def job(job_id: str) -> Response:
    """A job's state, progress and, once it ended, its result or error (one's own jobs; an
    admin's: every job)."""
    try:
        found = jobs.get_job(whole_number(job_id, "job id"))
    except ServiceError:  # not an id: no such job, as for an id nobody has
        found = None
    if found is None or not jobs.can_see(g.api_user, found):
        return api_params.error(404, "no such job")
    return jsonify(interop_requests.job_json(found))


@bp.post("/jobs/<job_id>/cancel")
def cancel_job(job_id: str) -> Response:
    """Cancel a queued job, or ask a running one to stop, as its page's Cancel does (one's own
    jobs; an admin's: every job); 409 when it had already ended."""
    try:
        found = jobs.get_job(whole_number(job_id, "job id"))
    except ServiceError:
        found = None
    if found is None or not jobs.can_see(g.api_user, found):
        return api_params.error(404, "no such job")
    if not jobs.cancel(found, g.api_user):
        return api_params.error(409, f"the job had already ended ({found.state})")
    return jsonify(interop_requests.job_json(jobs.get_job(found.id) or found))


@bp.get("/testsets/<path:test_set>/export")
def export(test_set: str) -> Response:
    """The test set in a peer's shape: ?format=quepid | srw-judgments | srw-queries."""
    chosen = visible_test_set(test_set)
    fmt = request.args.get("format", "")
    # An unknown format is refused as such below, not as grades a blind set keeps.
    if fmt in interop.GRADED_EXPORTS and not accounts.grades_visible(g.api_user, chosen):
        return api_params.error(403, "this test set is judged blind: its grades are for admins")
    try:
        body, name, mimetype = interop.export_test_set(
            chosen, fmt, request.args.get("aggregation") or None
        )
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    return download(body, name, mimetype)


@bp.get("/testsets/<path:test_set>/runs/<path:run>/export")
def export_run(test_set: str, run: str) -> Response:
    """The run as a Quepid case snapshot CSV (?format=quepid-snapshot, the default)."""
    found = run_in(visible_test_set(test_set), run)
    fmt = request.args.get("format", "quepid-snapshot")
    if fmt != "quepid-snapshot":
        return api_params.error(400, f"format must be quepid-snapshot, not '{fmt}'")
    try:
        return download(*interop.export_run_snapshot(found))
    except ServiceError as exc:  # queries sharing a text that the run ranks differently
        return api_params.error(400, str(exc))
