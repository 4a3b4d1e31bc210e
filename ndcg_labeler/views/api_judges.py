"""The JSON API's machine judges: looking one up by id or name, and changing where it is asked
and how fast (admins), as `flask judges edit` does."""

from __future__ import annotations

from flask import abort, g, jsonify
from werkzeug.wrappers import Response

from ndcg_labeler.models import Judge
from ndcg_labeler.services import ServiceError, judges, resolve_ref
from ndcg_labeler.views import api_params
from ndcg_labeler.views.api_access import bp


def judge_ref(ref: str) -> Judge:
    """The judge (services.resolve_ref: `id:N`, `name:X`, or a plain name or id); else 404;
    400 when the reference is one judge's id and another's name."""

    def by_name(name: str) -> Judge | None:
        try:
            return judges.require_judge(name)
        except ServiceError:
            return None

    try:
        judge = resolve_ref("judge", ref, judges.get_judge, by_name)
    except ServiceError as exc:
        abort(api_params.error(400, str(exc)))
    if judge is None:
        abort(api_params.error(404, f"no judge '{ref}'"))
    return judge


@bp.post("/judges/<judge>/settings")
def judge_settings(judge: str) -> Response:
    """Change the judge's base_url, concurrency, timeout or requests_per_minute (admins; the
    others stay): the same checks and words as `flask judges edit` and the judge's page."""
    if not g.api_user.is_admin:  # judges are the admins' (their pages too): not even named
        return api_params.error(404, f"no judge '{judge}'")
    chosen = judge_ref(judge)
    given = api_params.params()
    if not given:
        return api_params.error(400, f"give one or more of {', '.join(judges.EDITABLE)}")
    if not isinstance(given.get("base_url", ""), str):
        return api_params.error(400, "'base_url' must be a string")
    try:
        changed = judges.edit_judge(chosen, g.api_user, **given)
    except ServiceError as exc:
        return api_params.error(400, str(exc))
    settings = {name: getattr(chosen, name) for name in judges.EDITABLE}
    return jsonify(judge=chosen.name, changed=changed, settings=settings)
