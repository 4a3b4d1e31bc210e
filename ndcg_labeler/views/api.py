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
from typing import Any

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
    judges,
    live,
    pooling,
    ppi,
    runs,
    testsets,
)
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
        "mean_if_unjudged_top": result.mean_if_unjudged_top,
        "mean_condensed": result.mean_condensed,
        **result.means_json(),
    }


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


@bp.get("/testsets/<test_set>/qrels")
def qrels(test_set: str) -> Response:
    """The grades scoring uses, as TREC qrels text (?format=trec) or {qid: {docid: grade}}."""
    chosen = _test_set(test_set)
    if not accounts.grades_visible(g.api_user, chosen):
        return _error(403, "this test set is judged blind: its grades are for admins")
    text = live.qrels_text(chosen)
    if request.args.get("format", "json") == "trec":
        return Response(text, mimetype="text/plain")
    grades: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        qid, _, docid, grade = line.split()
        grades.setdefault(qid, {})[docid] = int(grade)
    return jsonify(qrels=grades)


@bp.post("/testsets/<test_set>/import")
def import_files(test_set: str) -> tuple[Response, int] | Response:
    """Import multipart files `queries`, `corpus`, `pool` and/or `qrels` (admins), all or
    nothing, as the import page does; optional `source` names the qrels' source, and
    `only_referenced` (true/1) keeps only the corpus chunks the pools, qrels and runs name."""
    chosen = _test_set(test_set)
    if not g.api_user.is_admin:
        return _error(403, "only admins import files")
    files = {
        kind: imports.ImportFile(storage.stream, os.path.basename(storage.filename or kind))
        for kind in ("queries", "corpus", "pool", "qrels")
        if (storage := request.files.get(kind)) is not None
    }
    try:
        report = imports.import_files(
            chosen,
            **files,
            source=request.form.get("source") or None,
            actor_id=g.api_user.id,
            only_referenced=request.form.get("only_referenced", "").lower() in ("1", "true", "on"),
        )
    except FormatError as exc:
        return _error(400, str(exc), file=exc.filename, line=exc.line, reason=exc.reason)
    except ServiceError as exc:
        return _error(400, str(exc))
    return jsonify(report=report.lines(), files=report.files), 201


@bp.get("/testsets/<test_set>/runs")
def list_runs(test_set: str) -> Response:
    """The test set's runs."""
    found = _test_set(test_set)
    return jsonify(runs=[_run_json(run) for run in runs.list_runs(found)])


@bp.get("/testsets/<test_set>/status")
def status(test_set: str) -> Response:
    """The test set's checklist and the next action for the token's owner."""
    found = _test_set(test_set)
    limit = current_app.config["NDCG_POOL_JOB_PAIRS"]
    return jsonify(checklist.checklist(found, g.api_user, limit).to_json())


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
        return jsonify(ppi.score_json(found, options))
    except ServiceError as exc:
        return _error(400, str(exc))


@bp.get("/testsets/<test_set>/compare")
def compare(test_set: str) -> Response:
    """Run `b` against run `a` (default: the two oldest runs): `flask run compare --json`."""
    chosen = _test_set(test_set)
    if not accounts.grades_visible(g.api_user, chosen):  # per-query figures, as on the pages
        return _error(403, "this test set is judged blind: per-query scores are for admins")
    refs = [request.args.get("a", "").strip(), request.args.get("b", "").strip()]
    if any(refs):
        if not all(refs):
            return _error(400, "name both runs, ?a=RUN&b=RUN (id or name), or neither")
        found = [_run(chosen, ref) for ref in refs]
    else:  # as the compare page's first visit: the two oldest runs
        found = runs.list_runs(chosen)[:2]
    try:
        options = live.parse_options(request.args)
        return jsonify(comparison.compare_json(comparison.compare_runs(found, options)))
    except ServiceError as exc:
        return _error(400, str(exc))


@bp.get("/testsets/<test_set>/next-labels")
def next_labels(test_set: str) -> Response:
    """What to label next between runs a and b: the same list as `flask pool SET --for-compare
    A B --depth K --json`, under "pairs", beside the flip test's figures."""
    chosen = _test_set(test_set)
    if not accounts.grades_visible(g.api_user, chosen):  # which pairs are judged, per query
        return _error(403, "this test set is judged blind: per-pair figures are for admins")
    names = {key: request.args.get(key, "").strip() for key in ("a", "b")}
    missing = [key for key, value in names.items() if not value]
    if missing:
        return _error(400, f"name the runs to compare: {', '.join(missing)}")
    run_a, run_b = _run(chosen, names["a"]), _run(chosen, names["b"])
    depth_text = request.args.get("depth", "10").strip()
    try:
        options = live.parse_options(request.args)
        if not depth_text.isdigit():
            raise ServiceError(f"depth must be a whole number, not '{depth_text}'")
        plan = pooling.plan_for_compare(chosen, run_a, run_b, int(depth_text), options)
    except ServiceError as exc:
        return _error(400, str(exc))
    return jsonify({**plan.summary_json(), "pairs": plan.to_json()})


def _params() -> dict[str, Any]:
    """The parameters from a JSON object or form fields (400 on a malformed body)."""
    if request.is_json:
        body = request.get_json()  # malformed or too deeply nested: 400 saying why
        if not isinstance(body, dict):
            abort(_error(400, "send the parameters as one JSON object"))
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
    params = _params()
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


def _judge(ref: str) -> Judge:
    """The judge (id or name); else 404."""
    judge = judges.get_judge(int(ref)) if ref.isdigit() else None
    if judge is None:
        try:
            judge = judges.require_judge(ref)
        except ServiceError:
            abort(_error(404, f"no judge '{ref}'"))
    return judge


@bp.get("/testsets/<test_set>/judges/<judge>/audit")
def audit_sample(test_set: str, judge: str) -> Response:
    """The judge's audit sample: seed, sampled qids in draw order, which are audited now."""
    found = _test_set(test_set)
    return jsonify(audit_samples.audit_state(found, _judge(judge)).to_json())


def _whole(params: dict[str, Any], key: str, *, required: bool) -> int | None:
    """A whole-number parameter (JSON number or form text); 400 when malformed or missing."""
    value = params.get(key)
    if value is None or value == "":
        if required:
            abort(_error(400, f"'{key}' is required"))
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        abort(_error(400, f"'{key}' must be a whole number"))
    return value


@bp.post("/testsets/<test_set>/judges/<judge>/audit")
def draw_audit(test_set: str, judge: str) -> Response:
    """Draw the judge's audit sample of `queries` queries, or extend it (admins): the same as
    `flask judges audit SET --judge JUDGE --queries N [--seed S] [--reseed]`."""
    found = _test_set(test_set)
    chosen = _judge(judge)
    if not g.api_user.is_admin:
        return _error(403, "only admins draw audit samples")
    params = _params()
    reseed = params.get("reseed", False)
    if isinstance(reseed, str):  # a form field
        reseed = {"true": True, "1": True, "false": False, "0": False, "": False}.get(
            reseed.strip().lower(), reseed
        )
    if not isinstance(reseed, bool):
        return _error(400, "'reseed' must be true or false")
    n = _whole(params, "queries", required=True)
    seed = _whole(params, "seed", required=False)
    try:
        state = audit_samples.draw_audit(
            found, chosen, n or 0, seed=seed, reseed=reseed, actor=g.api_user
        )
    except ServiceError as exc:
        return _error(400, str(exc))
    return jsonify(state.to_json())
