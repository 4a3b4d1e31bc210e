"""The JSON API's audit samples of machine judges: the sample's state, and drawing it (admins)."""

from __future__ import annotations

from flask import g, jsonify
from werkzeug.wrappers import Response

from ndcg_labeler.services import ServiceError, audit_samples
from ndcg_labeler.views import api_params
from ndcg_labeler.views.api_access import bp, visible_test_set
from ndcg_labeler.views.api_judges import judge_ref


@bp.get("/testsets/<path:test_set>/judges/<judge>/audit")
def audit_sample(test_set: str, judge: str) -> Response:
    """The judge's audit sample: seed, sampled qids in draw order, which are audited now."""
    found = visible_test_set(test_set)
    return jsonify(audit_samples.audit_state(found, judge_ref(judge)).to_json())


@bp.post("/testsets/<path:test_set>/judges/<judge>/audit")
def draw_audit(test_set: str, judge: str) -> Response:
    """Draw the judge's audit sample of `queries` queries, or extend it (admins): the same as
    `flask judges audit SET --judge JUDGE --queries N [--seed S] [--reseed]`."""
    found = visible_test_set(test_set)
    chosen = judge_ref(judge)
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
