"""The JSON API's test sets: those a token may see, a set's grades as qrels, its checklist."""

from __future__ import annotations

from flask import current_app, g, jsonify, request, url_for
from werkzeug.wrappers import Response

from ndcg_labeler.services import accounts, checklist, live, testsets
from ndcg_labeler.views import api_params
from ndcg_labeler.views.api_access import bp, visible_test_set


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
                "graded_outside_pool": counts.graded_outside_pool,
                "runs_url": url_for("api.list_runs", test_set=str(test_set.id), _external=True),
            }
        )
    return jsonify(test_sets=out)


@bp.get("/testsets/<path:test_set>/qrels")
def qrels(test_set: str) -> Response:
    """The grades scoring uses, as TREC qrels text (?format=trec) or {qid: {docid: grade}}."""
    chosen = visible_test_set(test_set)
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


@bp.get("/testsets/<path:test_set>/status")
def status(test_set: str) -> Response:
    """The test set's checklist and the next action for the token's owner."""
    found = visible_test_set(test_set)
    limit = current_app.config["NDCG_POOL_JOB_PAIRS"]
    return jsonify(checklist.checklist(found, g.api_user, limit).to_json())
