"""Dashboard exports: CSV and JSON twins of every table, qrels as TREC, trec_eval's -q layout."""

from __future__ import annotations

import json
from dataclasses import replace

from flask import Blueprint, Response, abort, request
from flask_login import current_user

from ndcg_labeler.models import TestSet
from ndcg_labeler.services import (
    ServiceError,
    comparison,
    dashboard,
    interop,
    live,
    pooling,
    ppi,
)
from ndcg_labeler.views._responses import download, still_computing
from ndcg_labeler.views._scoring import (
    chosen_runs,
    kept_or_400,
    measure_args,
    run_or_404,
    score_options,
)
from ndcg_labeler.views.access import get_test_set_or_404, require_grades_visible

bp = Blueprint("exports", __name__, url_prefix="/test-sets/<int:test_set_id>/dashboard/export")


def _json(data: object) -> Response:
    """JSON exactly as the CLI prints it (json.dumps, keys in the CLI's order), plus a newline."""
    return Response(json.dumps(data, ensure_ascii=False) + "\n", mimetype="application/json")


def _csv(body: str, filename: str) -> Response:
    return download(body, filename, "text/csv")


@bp.get("/overview.csv")
def overview_csv(test_set_id: int) -> Response:
    """The overview's runs table as CSV."""
    test_set = get_test_set_or_404(test_set_id)
    overview = dashboard.overview(test_set, current_user, score_options())
    return _csv(dashboard.overview_csv(overview), f"test-set-{test_set.id}-runs.csv")


@bp.get("/overview.json")
def overview_json(test_set_id: int) -> Response:
    """The overview's runs table as JSON."""
    test_set = get_test_set_or_404(test_set_id)
    return _json(dashboard.overview(test_set, current_user, score_options()).to_json())


@bp.get("/qrels.txt")
def qrels(test_set_id: int) -> Response:
    """The grades scoring uses as TREC qrels (the chosen or the test set's aggregation)."""
    test_set = get_test_set_or_404(test_set_id)
    require_grades_visible(test_set)
    options = score_options()
    body = live.qrels_text(test_set, options.policy)
    return download(body, f"test-set-{test_set.id}.qrels", "text/plain")


def _peer(test_set_id: int, fmt: str) -> Response:
    """The test set in a peer's shape, its grades as scoring uses them; on a blind set, an
    export holding grades is for those who may see them (a query set is for every member)."""
    test_set = get_test_set_or_404(test_set_id)
    if fmt in interop.GRADED_EXPORTS:
        require_grades_visible(test_set)
    try:
        return download(*interop.export_test_set(test_set, fmt, score_options().policy))
    except ServiceError as exc:  # queries sharing a text that grade one docid two ways
        abort(400, description=str(exc))


@bp.get("/quepid-judgments.csv")
def quepid_judgments(test_set_id: int) -> Response:
    """The grades scoring uses as Quepid's judgments CSV (query text, docid, rating)."""
    return _peer(test_set_id, "quepid")


@bp.get("/srw-judgments.json")
def srw_judgments(test_set_id: int) -> Response:
    """The grades scoring uses as an OpenSearch SRW judgment list."""
    return _peer(test_set_id, "srw-judgments")


@bp.get("/srw-query-set.json")
def srw_query_set(test_set_id: int) -> Response:
    """The test set's queries as an OpenSearch SRW query set (texts only, no grades)."""
    return _peer(test_set_id, "srw-queries")


@bp.get("/runs/<int:run_id>/quepid-snapshot.csv")
def run_snapshot(test_set_id: int, run_id: int) -> Response:
    """A run as a Quepid case snapshot CSV (its ranking; no grades)."""
    run = run_or_404(get_test_set_or_404(test_set_id), run_id)
    try:
        return download(*interop.export_run_snapshot(run))
    except ServiceError as exc:  # queries sharing a text that the run ranks differently
        abort(400, description=str(exc))


def _per_query_figures(test_set_id: int) -> TestSet:
    """The test set, when this user may see per-query figures (blind sets: as the grades)."""
    test_set = get_test_set_or_404(test_set_id)
    require_grades_visible(test_set)
    return test_set


@bp.get("/runs/<int:run_id>/queries.csv")
def run_csv(test_set_id: int, run_id: int) -> Response:
    """A run's per-query scores as CSV (the order and numbers of `flask run score --json`);
    ?measure= (repeat or comma-separate) adds a column per measure, named as given."""
    run = run_or_404(_per_query_figures(test_set_id), run_id)
    options = score_options()
    kept_or_400(run, options)
    try:
        extra = live.named_measures(run, measure_args(), options)
    except ServiceError as exc:
        abort(400, description=str(exc))
    body = dashboard.run_csv(live.score_run(run, options), extra)
    return _csv(body, f"run-{run.id}-queries.csv")


@bp.get("/runs/<int:run_id>/queries.json")
def run_json(test_set_id: int, run_id: int) -> Response:
    """A run's per-query scores: exactly `flask run score --json` (?measure= as --measure)."""
    run = run_or_404(_per_query_figures(test_set_id), run_id)
    options = score_options()
    kept_or_400(run, options)
    try:
        extra = live.named_measures(run, request.args.getlist("measure"), options)
    except ServiceError as exc:
        abort(400, description=str(exc))
    return _json(live.MeasureValues.into_json(ppi.score_json(run, options), extra))


@bp.get("/runs/<int:run_id>/trec_eval.txt")
def run_trec(test_set_id: int, run_id: int) -> Response:
    """A run's per-query scores in trec_eval's -q layout (`flask run score --trec`)."""
    run = run_or_404(_per_query_figures(test_set_id), run_id)
    try:
        body = "\n".join(live.trec_eval_lines(run, score_options())) + "\n"
    except ServiceError as exc:  # an archived run: its whole-list lines would be stale
        abort(400, description=str(exc))
    return download(body, f"run-{run.id}.trec_eval.txt", "text/plain")


def _drill_down(test_set_id: int, run_id: int, query_id: int) -> dashboard.DrillDown:
    test_set = get_test_set_or_404(test_set_id)
    require_grades_visible(test_set)
    run = run_or_404(test_set, run_id)
    query = dashboard.get_query(test_set, query_id) or abort(404)
    options = score_options()
    kept_or_400(run, options)
    return dashboard.drill_down(test_set, run, query, options)


@bp.get("/runs/<int:run_id>/queries/<int:query_id>.csv")
def query_csv(test_set_id: int, run_id: int, query_id: int) -> Response:
    """A query's run top k and ideal top k as CSV."""
    view = _drill_down(test_set_id, run_id, query_id)
    return _csv(dashboard.drill_down_csv(view), f"run-{run_id}-query-{query_id}.csv")


@bp.get("/runs/<int:run_id>/queries/<int:query_id>.json")
def query_json(test_set_id: int, run_id: int, query_id: int) -> Response:
    """A query's drill-down as JSON."""
    return _json(_drill_down(test_set_id, run_id, query_id).detail.to_json())


def _comparison(test_set_id: int, background: bool = False) -> comparison.Comparison:
    """The chosen runs compared; with stored intervals and tests only (`background`: computed
    here up to INLINE_MAX_VALUES, compared queries × runs; beyond, started in the background)."""
    # Both exports are per-query NDCG of each run: on a blind set, as the run table's exports.
    test_set = _per_query_figures(test_set_id)
    try:
        return comparison.compare_runs(
            chosen_runs(test_set), score_options(), stats=False, background=background
        )
    except ServiceError as exc:
        abort(400, description=str(exc))


@bp.get("/compare.csv")
def compare_csv(test_set_id: int) -> Response:
    """Per-query NDCG@k of runs A and B and their difference as CSV; ?measure= adds each
    measure's value in A and in B as two columns, `<name as given>:<run>`."""
    result = _comparison(test_set_id)
    try:
        body = comparison.compare_csv(result, measure_args(), score_options())
    except ServiceError as exc:
        abort(400, description=str(exc))
    return _csv(body, "compare.csv")


@bp.get("/compare.json")
def compare_json(test_set_id: int) -> Response:
    """The comparison: exactly `flask run compare --json` (plus every pair for 3+ runs).

    Its intervals and paired tests take seconds on a large comparison: until they are stored
    the answer is 202 with Retry-After (they are computed once, in the background)."""
    result = _comparison(test_set_id, background=True)
    if not result.stats_ready:
        return still_computing(
            "The bootstrap intervals and paired tests of this comparison are being computed; "
            "ask again in a few seconds.",
            retry_after=2,
        )
    out = comparison.compare_json(result)
    try:
        chosen = chosen_runs(get_test_set_or_404(test_set_id))
        extra = comparison.measures_block(chosen, request.args.getlist("measure"), score_options())
    except ServiceError as exc:
        abort(400, description=str(exc))
    return _json({**out, "measures": extra} if extra else out)


@bp.get("/compare-next.json")
def compare_next_json(test_set_id: int) -> Response:
    """What to label next between runs A and B: exactly `flask pool SET --for-compare A B
    --depth K --json` (depth and k as pooling.compare_cut reads them, as the API does)."""
    test_set = get_test_set_or_404(test_set_id)
    require_grades_visible(test_set)  # which pairs are judged is the grades' business
    chosen = chosen_runs(test_set)
    if len(chosen) != 2:
        abort(400, description="choose exactly two runs (?run=A&run=B)")
    options = score_options()
    try:
        depth, k = pooling.compare_cut(request.args.get("depth"), request.args.get("k"))
        options = replace(options, k=k)  # as the API: ?depth= alone below 10 sets k
        plan = pooling.plan_for_compare(test_set, chosen[0], chosen[1], depth, options)
    except ServiceError as exc:
        abort(400, description=str(exc))
    return _json(plan.to_json())
