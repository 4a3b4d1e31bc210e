"""The JSON API's blueprint and its door: the bearer token checked before every route, and the
test sets and runs a token's owner may address (404 for the rest: hidden stays hidden)."""

from __future__ import annotations

from flask import Blueprint, abort, g, request
from werkzeug.wrappers import Response

from ndcg_labeler import throttle
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import ServiceError, accounts, runs, testsets
from ndcg_labeler.views import api_params
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


def visible_test_set(ref: str) -> TestSet:
    """The test set (id or name) if the token's owner may see it; else 404 (hidden stays
    hidden: a test set they may not see is neither found nor a clash); 400 when the reference
    is one test set's id and another's name."""
    try:
        test_set = testsets.get_by_ref(ref, lambda found: accounts.can_view(g.api_user, found))
    except ServiceError as exc:
        abort(api_params.error(400, str(exc)))
    if test_set is None:
        abort(api_params.error(404, "no such test set"))
    return test_set


def run_in(test_set: TestSet, ref: str) -> Run:
    """The test set's run (id or name); else 404; 400 when the reference is one run's id and
    another's name."""
    try:
        run = runs.get_run(test_set, ref)
    except ServiceError as exc:
        abort(api_params.error(400, str(exc)))
    if run is None:
        abort(api_params.error(404, f"test set '{test_set.name}' has no run '{ref}'"))
    return run
