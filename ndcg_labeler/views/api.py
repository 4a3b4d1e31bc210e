"""JSON API authenticated by personal tokens (`Authorization: Bearer ...`): runs, scores, gate,
judges' audit samples, and what to label next for a comparison.

No session and no CSRF (a bearer token is not sent by browsers on their own); 401 without a
valid token (429 after too many wrong ones from one address), 404 for test sets the token's
owner may not see, 403 for non-admins uploading.
Test sets, runs and judges are addressed by id or by name (an all-digit reference is an id
first).
The OpenAPI document (views/openapi_spec.py) describes every route here.
"""

from __future__ import annotations

import os

from flask import Blueprint, abort, current_app, g, jsonify, request, url_for
from werkzeug.wrappers import Response

from ndcg_labeler import throttle
from ndcg_labeler.formats import FormatError
from ndcg_labeler.models import Judge, Run, TestSet
from ndcg_labeler.services import (
    ServiceError,
    accounts,
    audit_samples,
    checklist,
    comparison,
    gate,
    imports,
    interop,
    jobs,
    judges,
    live,
    pooling,
    ppi,
    runs,
    testsets,
    whole_number,
)
from ndcg_labeler.views import api_json, api_params, interop_requests
from ndcg_labeler.views._run_lists import list_filter
from ndcg_labeler.web_extensions import csrf

bp = Blueprint("api", __name__, url_prefix="/api")
csrf.exempt(bp)


@bp.before_request
def authenticate() -> Response | None:
    """Find the user of the bearer token; 401 when there is none or it is not valid."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    presented = scheme.lower() == "bearer" and bool(token.strip())
    keys = throttle.token_keys()
    if presented:
        refusal = throttle.refused(throttle.API_TOKEN, keys)
        if refusal is not None:
            response = api_params.error(
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
        response = api_params.error(
            401, "send a valid personal API token: Authorization: Bearer <token>"
        )
        response.headers["WWW-Authenticate"] = 'Bearer realm="ndcg-labeler"'
        return response
    g.api_user = user
    return None


def _test_set(ref: str) -> TestSet:
    """The test set (id or name) if the token's owner may see it; else 404 (hidden stays hidden)."""
    test_set = testsets.get_by_ref(ref)
    if test_set is None or not accounts.can_view(g.api_user, test_set):
        abort(api_params.error(404, "no such test set"))
    return test_set


def _run(test_set: TestSet, ref: str) -> Run:
    """The test set's run (id or name); else 404."""
    run = runs.get_run(test_set, ref)
    if run is None:
        abort(api_params.error(404, f"test set '{test_set.name}' has no run '{ref}'"))
    return run


@bp.get("/testsets")
def list_test_sets() -> Response:
    """The test sets the token's owner may see, with their sizes."""
    out = []
    for test_set in accounts.visible_test_sets(g.api_user):
        counts = testsets.summary(test_set)
        out.append(
            {
                "id": test_set.id,
                "name": test_set.name,
                "scale_max": test_set.scale_max,
                "aggregation": test_set.aggregation,
                "queries": counts.queries,
                "chunks": counts.chunks,
                "pairs": counts.pairs,
                "judged_pairs": counts.judged_pairs,
                "runs_url": url_for("api.list_runs", test_set=str(test_set.id), _external=True),
            }
        )
    return jsonify(test_sets=out)


@bp.get("/testsets/<path:test_set>/qrels")
def qrels(test_set: str) -> Response:
    """The grades scoring uses, as TREC qrels text (?format=trec) or {qid: {docid: grade}}."""
    chosen = _test_set(test_set)
    if not accounts.grades_visible(g.api_user, chosen):
        return api_params.error(403, "this test set is judged blind: its grades are for admins")
    fmt = request.args.get("format", "json")
    if fmt not in ("json", "trec"):
        # Answering JSON to a format we do not write would hand a script the wrong file.
        return api_params.error(400, f"format must be json or trec, not '{fmt}'")
    text = live.qrels_text(chosen)
    if fmt == "trec":
        return Response(text, mimetype="text/plain")
    grades: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        qid, _, docid, grade = line.split()
        grades.setdefault(qid, {})[docid] = int(grade)
    return jsonify(qrels=grades)


@bp.post("/testsets/<path:test_set>/import")
def import_files(test_set: str) -> tuple[Response, int] | Response:
    """Import multipart files `queries`, `corpus`, `pool` and/or `qrels` (admins), all or
    nothing, as the import page does; optional `source` names the qrels' source, and
    `only_referenced` (true/1) keeps only the corpus chunks the pools, qrels and runs name. Or
    one peer's file (`quepid`, `srw_judgments`, `srw_queries`, with `rating_map`) or
    `ir_datasets` NAME; a large dataset is imported by the job worker: 202 with the job,
    followed at /api/jobs/ID."""
    chosen = _test_set(test_set)
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
    try:
        interop_requests.check_rating_map(request.form.get("rating_map"), peers)
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
            only = api_params.flag(request.form.to_dict(), "only_referenced")
            report = imports.import_files(
                chosen, **files, source=source, actor_id=g.api_user.id, only_referenced=only
            )
    except FormatError as exc:
        return api_params.error(400, str(exc), file=exc.filename, line=exc.line, reason=exc.reason)
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    return jsonify(interop_requests.report_json(report)), 201


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


@bp.get("/testsets/<path:test_set>/export")
def export(test_set: str) -> Response:
    """The test set in a peer's shape: ?format=quepid | srw-judgments | srw-queries."""
    chosen = _test_set(test_set)
    fmt = request.args.get("format", "")
    if fmt != "srw-queries" and not accounts.grades_visible(g.api_user, chosen):
        return api_params.error(403, "this test set is judged blind: its grades are for admins")
    try:
        body, name, mimetype = interop.export_test_set(
            chosen, fmt, request.args.get("aggregation") or None
        )
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    return interop_requests.download(body, name, mimetype)


@bp.get("/testsets/<path:test_set>/runs/<path:run>/export")
def export_run(test_set: str, run: str) -> Response:
    """The run as a Quepid case snapshot CSV (?format=quepid-snapshot, the default)."""
    found = _run(_test_set(test_set), run)
    fmt = request.args.get("format", "quepid-snapshot")
    if fmt != "quepid-snapshot":
        return api_params.error(400, f"format must be quepid-snapshot, not '{fmt}'")
    return interop_requests.download(*interop.export_run_snapshot(found))


# Runs per page of the API's list unless ?per_page= says otherwise.
PER_PAGE = 50
MAX_PER_PAGE = 200


@bp.get("/testsets/<path:test_set>/runs")
def list_runs(test_set: str) -> Response:
    """One page of the test set's runs: ?q= (name or notes), ?tag=, ?archived=yes|no,
    ?sort=, ?page= and ?per_page=; only the page's runs are scored."""
    found = _test_set(test_set)
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
    chosen = _test_set(test_set)
    if not g.api_user.is_admin:
        return api_params.error(403, "only admins archive runs")
    found = _run(chosen, run)
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
    chosen = _test_set(test_set)
    if not g.api_user.is_admin:
        return api_params.error(403, "only admins tag runs")
    found = _run(chosen, run)
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


@bp.get("/testsets/<path:test_set>/status")
def status(test_set: str) -> Response:
    """The test set's checklist and the next action for the token's owner."""
    found = _test_set(test_set)
    limit = current_app.config["NDCG_POOL_JOB_PAIRS"]
    return jsonify(checklist.checklist(found, g.api_user, limit).to_json())


@bp.post("/testsets/<path:test_set>/runs")
def upload(test_set: str) -> tuple[Response, int] | Response:
    """Upload a run: multipart `file`, optional `name` (default: the file's name), `depth`,
    `notes` and `series` (admins)."""
    return _upload(_test_set(test_set))


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


@bp.get("/testsets/<path:test_set>/runs/<path:run>/scores")
def scores(test_set: str, run: str) -> Response:
    """The run's current scores: the same JSON as `flask run score --json`."""
    chosen = _test_set(test_set)
    if not accounts.grades_visible(g.api_user, chosen):  # per-query figures, as on the pages
        return api_params.error(
            403, "this test set is judged blind: per-query scores are for admins"
        )
    found = _run(chosen, run)
    try:
        options = live.parse_options(request.args)
        extra = live.named_measures(found, request.args.getlist("measure"), options)
        return jsonify(live.MeasureValues.into_json(ppi.score_json(found, options), extra))
    except ServiceError as exc:
        return api_params.error(400, str(exc))


@bp.get("/testsets/<path:test_set>/compare")
def compare(test_set: str) -> Response:
    """Run `b` against run `a` (default: the two oldest runs): `flask run compare --json`."""
    chosen = _test_set(test_set)
    if not accounts.grades_visible(g.api_user, chosen):  # per-query figures, as on the pages
        return api_params.error(
            403, "this test set is judged blind: per-query scores are for admins"
        )
    refs = [request.args.get("a", "").strip(), request.args.get("b", "").strip()]
    if any(refs):
        if not all(refs):
            return api_params.error(400, "name both runs, ?a=RUN&b=RUN (id or name), or neither")
        found = [_run(chosen, ref) for ref in refs]
    else:  # as the compare page's first visit: the two oldest runs
        found = runs.list_runs(chosen)[:2]
    try:
        options = live.parse_options(request.args)
        extra = comparison.measures_block(found, request.args.getlist("measure"), options)
        out = comparison.compare_json(comparison.compare_runs(found, options))
        return jsonify({**out, "measures": extra} if extra else out)
    except ServiceError as exc:
        return api_params.error(400, str(exc))


@bp.get("/testsets/<path:test_set>/next-labels")
def next_labels(test_set: str) -> Response:
    """What to label next between runs a and b: the same list as `flask pool SET --for-compare
    A B --depth K --json`, under "pairs", beside the flip test's figures."""
    chosen = _test_set(test_set)
    if not accounts.grades_visible(g.api_user, chosen):  # which pairs are judged, per query
        return api_params.error(
            403, "this test set is judged blind: per-pair figures are for admins"
        )
    names = {key: request.args.get(key, "").strip() for key in ("a", "b")}
    missing = [key for key, value in names.items() if not value]
    if missing:
        return api_params.error(400, f"name the runs to compare: {', '.join(missing)}")
    run_a, run_b = _run(chosen, names["a"]), _run(chosen, names["b"])
    depth_text = request.args.get("depth", "10").strip()
    try:
        options = live.parse_options(request.args)
        depth = whole_number(depth_text, "depth", 1, pooling.MAX_DEPTH)
        plan = pooling.plan_for_compare(chosen, run_a, run_b, depth, options)
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    return jsonify({**plan.summary_json(), "pairs": plan.to_json()})


@bp.post("/testsets/<path:test_set>/gate")
def gate_check(test_set: str) -> Response:
    """The release gate: does `candidate` pass, fail or stay open against `baseline`?"""
    found = _test_set(test_set)
    fmt = request.args.get("format", "json")
    if fmt not in ("json", "junit", "markdown"):
        return api_params.error(400, f"format must be json, junit or markdown, not '{fmt}'")
    params = api_params.params()
    baseline = _run(found, api_params.text(params, "baseline"))
    candidate = _run(found, api_params.text(params, "candidate"))
    try:
        result = gate.run_gate(
            found,
            baseline,
            candidate,
            measures=api_params.measures(params),
            max_drop=api_params.number(params, "max_drop", gate.DEFAULT_MAX_DROP),
            alpha=api_params.number(params, "alpha", 0.05),
            labels=api_params.text(params, "labels", "human"),
            max_drop_name="'max_drop'",  # the JSON key, as api_params names a malformed one
            alpha_name="'alpha'",
        )
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    if not accounts.grades_visible(g.api_user, found):  # per-query figures, as in scores
        result = result.withholding_queries()
    if fmt == "junit":
        return Response(gate.junit_xml(result), mimetype="application/xml")
    if fmt == "markdown":
        return Response(gate.markdown(result), mimetype="text/markdown")
    return jsonify(result.to_json())


def _judge(ref: str) -> Judge:
    """The judge (id or name); else 404."""
    try:
        judge = judges.get_judge(whole_number(ref, "judge"))
    except ServiceError:  # not an id: a name
        judge = None
    if judge is None:
        try:
            judge = judges.require_judge(ref)
        except ServiceError:
            abort(api_params.error(404, f"no judge '{ref}'"))
    return judge


@bp.get("/testsets/<path:test_set>/judges/<judge>/audit")
def audit_sample(test_set: str, judge: str) -> Response:
    """The judge's audit sample: seed, sampled qids in draw order, which are audited now."""
    found = _test_set(test_set)
    return jsonify(audit_samples.audit_state(found, _judge(judge)).to_json())


@bp.post("/testsets/<path:test_set>/judges/<judge>/audit")
def draw_audit(test_set: str, judge: str) -> Response:
    """Draw the judge's audit sample of `queries` queries, or extend it (admins): the same as
    `flask judges audit SET --judge JUDGE --queries N [--seed S] [--reseed]`."""
    found = _test_set(test_set)
    chosen = _judge(judge)
    if not g.api_user.is_admin:
        return api_params.error(403, "only admins draw audit samples")
    params = api_params.params()
    reseed = params.get("reseed", False)
    if isinstance(reseed, str):  # a form field
        reseed = {"true": True, "1": True, "false": False, "0": False, "": False}.get(
            reseed.strip().lower(), reseed
        )
    if not isinstance(reseed, bool):
        return api_params.error(400, "'reseed' must be true or false")
    n = api_params.whole(params, "queries", required=True)
    seed = api_params.whole(params, "seed", required=False)
    try:
        state = audit_samples.draw_audit(
            found, chosen, n or 0, seed=seed, reseed=reseed, actor=g.api_user
        )
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    return jsonify(state.to_json())
