"""The JSON API's figures: a run's scores, two runs compared, what to label next between
them, and the release gate's verdict."""

from __future__ import annotations

from flask import g, jsonify, request
from werkzeug.wrappers import Response

from ndcg_labeler.services import (
    ServiceError,
    accounts,
    comparison,
    gate,
    live,
    pooling,
    ppi,
    runs,
)
from ndcg_labeler.views import api_params
from ndcg_labeler.views.api_access import bp, run_in, visible_test_set


@bp.get("/testsets/<path:test_set>/runs/<path:run>/scores")
def scores(test_set: str, run: str) -> Response:
    """The run's current scores: the same JSON as `flask run score --json`."""
    chosen = visible_test_set(test_set)
    if not accounts.grades_visible(g.api_user, chosen):  # per-query figures, as on the pages
        return api_params.error(
            403, "this test set is judged blind: per-query scores are for admins"
        )
    found = run_in(chosen, run)
    try:
        options = live.parse_options(request.args)
        extra = live.named_measures(found, request.args.getlist("measure"), options)
        return jsonify(live.MeasureValues.into_json(ppi.score_json(found, options), extra))
    except ServiceError as exc:
        return api_params.error(400, str(exc))


@bp.get("/testsets/<path:test_set>/compare")
def compare(test_set: str) -> Response:
    """Run `b` against run `a` (default: the two oldest runs): `flask run compare --json`."""
    chosen = visible_test_set(test_set)
    if not accounts.grades_visible(g.api_user, chosen):  # per-query figures, as on the pages
        return api_params.error(
            403, "this test set is judged blind: per-query scores are for admins"
        )
    refs = [request.args.get("a", "").strip(), request.args.get("b", "").strip()]
    if any(refs):
        if not all(refs):
            return api_params.error(400, "name both runs, ?a=RUN&b=RUN (id or name), or neither")
        found = [run_in(chosen, ref) for ref in refs]
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
    A B --depth K --json`, under "pairs", beside the flip test's figures; ?depth= and ?k=
    defaulting to each other as on the compare page (pooling.compare_cut)."""
    chosen = visible_test_set(test_set)
    if not accounts.grades_visible(g.api_user, chosen):  # which pairs are judged, per query
        return api_params.error(
            403, "this test set is judged blind: per-pair figures are for admins"
        )
    names = {key: request.args.get(key, "").strip() for key in ("a", "b")}
    missing = [key for key, value in names.items() if not value]
    if missing:
        return api_params.error(400, f"name the runs to compare: {', '.join(missing)}")
    run_a, run_b = run_in(chosen, names["a"]), run_in(chosen, names["b"])
    try:
        # depth and k as the compare page reads them (its list is its top k): one rule.
        depth, k = pooling.compare_cut(request.args.get("depth"), request.args.get("k"))
        options = live.parse_options({**request.args.to_dict(), "k": str(k)})
        plan = pooling.plan_for_compare(chosen, run_a, run_b, depth, options)
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    return jsonify(plan.with_pairs_json())


@bp.post("/testsets/<path:test_set>/gate")
def gate_check(test_set: str) -> Response:
    """The release gate: does `candidate` pass, fail or stay open against `baseline`?"""
    found = visible_test_set(test_set)
    fmt = request.args.get("format", "json")
    if fmt not in ("json", "junit", "markdown"):
        return api_params.error(400, f"format must be json, junit or markdown, not '{fmt}'")
    params = api_params.params()
    baseline = run_in(found, api_params.text(params, "baseline"))
    candidate = run_in(found, api_params.text(params, "candidate"))
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
