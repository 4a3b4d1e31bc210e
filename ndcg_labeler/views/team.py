"""Team judging pages: agreement, people, disagreement review and adjudication, policy check,
exports."""

from __future__ import annotations

from flask import (
    Blueprint,
    Response,
    abort,
    flash,
    jsonify,
    redirect,
    render_template,
    request,
    stream_with_context,
    url_for,
)
from flask_login import current_user
from werkzeug.wrappers import Response as BaseResponse
from wtforms.fields.choices import SelectChoice

from ndcg_labeler.forms.team import AdjudicationForm, RemoveAdjudicationForm, ThresholdForm
from ndcg_labeler.models import Chunk, Query, TestSet
from ndcg_labeler.scoring import POLICIES
from ndcg_labeler.services import ServiceError, live, paginate, team
from ndcg_labeler.views._responses import download, still_computing
from ndcg_labeler.views._scoring import k_arg, page_arg
from ndcg_labeler.views.access import (
    admin_required,
    get_test_set_or_404,
    may_see_grades,
    require_grades_visible,
)

bp = Blueprint("team", __name__, url_prefix="/test-sets/<int:test_set_id>")


@bp.errorhandler(team.Computing)
def computing(error: team.Computing) -> tuple[str, int]:
    """A large set's first figures are computed in the background: say so and ask again."""
    test_set = get_test_set_or_404(int((request.view_args or {})["test_set_id"]))
    return render_template("team/computing.html", test_set=test_set, error=error), 202


PER_PAGE = 50


def _not_yet(error: team.Computing) -> Response:
    """A download asked before a large set's first figures are in (its page would say
    "computing" and refresh): 202, ask again; they are being computed in the background."""
    return still_computing(
        f"{error.judgments:,} judgments are being read in the background for these figures' "
        "first computation; ask again in a few seconds.",
        retry_after=3,
    )


def _imports_arg() -> bool:
    """?imports=1 counts import sources as raters."""
    return request.args.get("imports") == "1"


@bp.get("/agreement")
def agreement_page(test_set_id: int) -> str:
    """Agreement for the test set, per two annotators and per query, with what each means."""
    test_set = get_test_set_or_404(test_set_id)
    require_grades_visible(test_set)  # agreement figures are others' grades, summed up
    include = _imports_arg()
    figures = team.cached_agreement_report(test_set, include_imports=include, background=True)
    found = figures.value
    sort = request.args.get("sort", "qid")
    if sort not in team.QUERY_SORTS:
        sort = "qid"
    queries = paginate(team.sort_queries(found.queries, sort), page_arg(), PER_PAGE)
    # A team of hundreds has tens of thousands of annotator pairs: their own pager.
    pairs_page = page_arg("pairs_page")
    annotator_pairs = paginate(found.annotator_pairs, pairs_page, PER_PAGE)
    return render_template(
        "team/agreement.html",
        test_set=test_set,
        report=found,
        queries=queries,
        annotator_pairs=annotator_pairs,
        sort=sort,
        include_imports=include,
        updating=figures.updating,
    )


@bp.get("/agreement.json")
def agreement_json(test_set_id: int) -> BaseResponse:
    """The agreement page as JSON: the CLI's object plus per-query figures."""
    test_set = get_test_set_or_404(test_set_id)
    require_grades_visible(test_set)
    try:
        cached = team.cached_agreement_report(
            test_set, include_imports=_imports_arg(), background=True
        )
    except team.Computing as error:
        return _not_yet(error)
    found = cached.value
    body = found.summary.as_dict()
    body["include_imports"] = found.include_imports
    body["updating"] = cached.updating  # the last figures, newer ones being computed
    body["annotator_pairs"] = [vars(pair) for pair in found.annotator_pairs]
    body["queries"] = [
        {k: v for k, v in vars(row).items() if k != "query_id"} for row in found.queries
    ]
    return jsonify(body)


def _agreement_csv(test_set_id: int, table: str) -> Response:
    """One table of the agreement page as a CSV download (?sort= orders the queries)."""
    test_set = get_test_set_or_404(test_set_id)
    require_grades_visible(test_set)  # as the page: others' grades, summed up
    include = _imports_arg()
    try:
        cached = team.cached_agreement_report(test_set, include_imports=include, background=True)
    except team.Computing as error:
        return _not_yet(error)
    sort = request.args.get("sort", "qid")
    body = cached.value.table_csv(table, sort if sort in team.QUERY_SORTS else "qid")
    name = f"agreement-{table}-{test_set.id}{'-imports' if include else ''}.csv"
    return download(body, name, "text/csv")


@bp.get("/agreement-pairs.csv")
def agreement_pairs_csv(test_set_id: int) -> Response:
    """The agreement of each two annotators as CSV (every row, not one page)."""
    return _agreement_csv(test_set_id, "pairs")


@bp.get("/agreement-queries.csv")
def agreement_queries_csv(test_set_id: int) -> Response:
    """The agreement on each query as CSV (every row, in the ?sort= order)."""
    return _agreement_csv(test_set_id, "queries")


def _people(test_set: TestSet, *, background: bool = False) -> team.Cached[list[team.Person]]:
    """The People rows this user may see: admins everyone, an annotator their own row."""
    only = None if current_user.is_admin else current_user.id
    rows = team.cached_people(
        test_set, include_imports=_imports_arg(), only_user_id=only, background=background
    )
    if may_see_grades(test_set):
        return rows
    # Blind set: agreement with the others is their grades summed up, kept from annotators.
    return team.Cached(team.without_agreement(rows.value), rows.updating)


@bp.get("/people")
def people_page(test_set_id: int) -> str:
    """Per annotator: volume, speed, grades, agreement with the others and its trend.

    Admins see everyone; an annotator sees only their own row.
    """
    test_set = get_test_set_or_404(test_set_id)
    include = _imports_arg()
    rows = _people(test_set, background=True)
    return render_template(
        "team/people.html",
        test_set=test_set,
        people=paginate(rows.value, page_arg(), PER_PAGE),
        include_imports=include,
        own_only=not current_user.is_admin,
        agreement_withheld=not may_see_grades(test_set),
        updating=rows.updating,
    )


@bp.get("/people.csv")
def people_csv(test_set_id: int) -> Response:
    """The People table as CSV (the rows the page shows this user)."""
    test_set = get_test_set_or_404(test_set_id)
    try:
        rows = _people(test_set, background=True)
    except team.Computing as error:
        return _not_yet(error)
    body = team.people_csv(rows.value, test_set.scale_max)
    response = Response(body, mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="people-{test_set.id}.csv"'
    return response


@bp.get("/people.json")
def people_json(test_set_id: int) -> BaseResponse:
    """The People table as JSON (the rows the page shows this user)."""
    test_set = get_test_set_or_404(test_set_id)
    try:
        rows = _people(test_set, background=True)
    except team.Computing as error:
        return _not_yet(error)
    return jsonify({"people": team.people_records(rows.value), "updating": rows.updating})


@bp.get("/review")
@admin_required
def review_queue(test_set_id: int) -> str:
    """Disputed pairs, most disputed first; ?all=1 keeps adjudicated ones in the list."""
    test_set = get_test_set_or_404(test_set_id)
    include = request.args.get("all") == "1"
    found = team.cached_review_queue(test_set, include_adjudicated=include, page=page_arg())
    form = ThresholdForm(threshold=test_set.disagreement_threshold)
    return render_template(
        "team/review.html", test_set=test_set, page=found, include_adjudicated=include, form=form
    )


@bp.post("/review/threshold")
@admin_required
def review_threshold(test_set_id: int) -> BaseResponse:
    """Change the test set's disagreement threshold from the review page."""
    test_set = get_test_set_or_404(test_set_id)
    form = ThresholdForm()
    if form.validate_on_submit():
        try:
            team.set_threshold(test_set, int(form.threshold.data or 0), current_user)
        except ServiceError as exc:
            flash(str(exc), "error")
        else:
            flash(
                f"Pairs whose grades differ by {form.threshold.data} or more are flagged.",
                "success",
            )
    else:
        for error in form.threshold.errors:
            flash(f"Threshold: {error}", "error")
    return redirect(url_for("team.review_queue", test_set_id=test_set.id))


def _pair_or_404(test_set: TestSet, query_id: int, chunk_id: int) -> tuple[Query, Chunk]:
    found = team.find_pair(test_set, query_id, chunk_id)
    if found is None:
        abort(404)
    return found


def _adjudication_form(test_set: TestSet) -> AdjudicationForm:
    form = AdjudicationForm()
    labels = test_set.grade_labels
    form.grade.choices = [
        SelectChoice(g, f"{g} · {labels[g]['name']}" if g < len(labels) else str(g))
        for g in range(test_set.scale_max + 1)
    ]
    return form


@bp.route("/review/<int:query_id>/<int:chunk_id>", methods=["GET", "POST"])
@admin_required
def review_pair(test_set_id: int, query_id: int, chunk_id: int) -> str | BaseResponse:
    """Every grade of one pair with notes and times; the admin sets the final grade."""
    test_set = get_test_set_or_404(test_set_id)
    query, chunk = _pair_or_404(test_set, query_id, chunk_id)
    form = _adjudication_form(test_set)
    status = 400 if request.method == "POST" else 200
    if form.validate_on_submit():
        try:
            result = team.adjudicate(
                test_set,
                query,
                chunk,
                int(form.grade.data),
                form.note.data,
                current_user,
                seen=form.seen.data or "",
            )
        except team.GradesChanged as exc:
            # The page shows the grades now and carries them: saving again confirms.
            form.grade.errors = [*form.grade.errors, str(exc)]
            status = 409
        except ServiceError as exc:
            form.grade.errors = [*form.grade.errors, str(exc)]
        else:
            what = "saved" if result.changed else "unchanged"
            flash(
                f"Final grade of {query.qid} / {chunk.docid}: {result.new_grade} ({what}).",
                "success",
            )
            return redirect(_next_disputed(test_set))
    detail = team.pair_detail(test_set, query, chunk)
    if request.method == "GET" and detail.adjudication is not None:
        form.grade.data = detail.adjudication.grade
        form.note.data = detail.adjudication.note
    return (
        render_template(
            "team/pair.html",
            test_set=test_set,
            detail=detail,
            form=form,
            remove_form=RemoveAdjudicationForm(),
            skip_url=_next_disputed(test_set, after=(query.id, chunk.id)),
        ),
        status,
    )


def _next_disputed(test_set: TestSet, after: tuple[int, int] | None = None) -> str:
    """The most disputed pair still waiting (after `after` in the queue's order, for a skip;
    wrapping round), or the queue when none is left."""
    found = team.cached_next_disputed(test_set, after)
    if found is None:
        return url_for("team.review_queue", test_set_id=test_set.id)
    query_id, chunk_id = found
    return url_for(
        "team.review_pair", test_set_id=test_set.id, query_id=query_id, chunk_id=chunk_id
    )


@bp.post("/review/<int:query_id>/<int:chunk_id>/remove")
@admin_required
def remove_adjudication(test_set_id: int, query_id: int, chunk_id: int) -> BaseResponse:
    """Withdraw a pair's final grade; the history keeps it."""
    test_set = get_test_set_or_404(test_set_id)
    query, chunk = _pair_or_404(test_set, query_id, chunk_id)
    if RemoveAdjudicationForm().validate_on_submit():
        result = team.remove(test_set, query, chunk, current_user)
        if result.changed:
            flash(f"Final grade of {query.qid} / {chunk.docid} removed.", "success")
    return redirect(
        url_for("team.review_pair", test_set_id=test_set.id, query_id=query.id, chunk_id=chunk.id)
    )


@bp.get("/policies")
def policies_page(test_set_id: int) -> str:
    """Each run's mean NDCG@k under every aggregation policy, and whether the order changes."""
    test_set = get_test_set_or_404(test_set_id)
    k = k_arg()
    if k not in live.K_CHOICES:  # each k is computed and cached: only the offered ones
        choices = ", ".join(map(str, live.K_CHOICES))
        abort(400, description=f"k must be one of {choices} on this page, not {k}")
    if not may_see_grades(test_set):
        # Blind set: a run's mean under max or min (or any other policy than the set's) is the
        # others' grades summed up; on a small set an annotator could read them off it.
        return render_template(
            "team/policies.html", test_set=test_set, comparison=None, withheld=True
        )
    comparison = team.cached_policies(test_set, k, background=True)
    return render_template(
        "team/policies.html",
        test_set=test_set,
        comparison=comparison.value,
        k_choices=live.K_CHOICES,
        updating=comparison.updating,
        withheld=False,
    )


@bp.get("/export")
@admin_required
def export_page(test_set_id: int) -> str:
    """Download links: every judgment (CSV, JSONL) and the aggregated qrels."""
    test_set = get_test_set_or_404(test_set_id)
    return render_template("team/export.html", test_set=test_set, policies=POLICIES)


@bp.get("/export/judgments.<fmt>")
@admin_required
def export_judgments(test_set_id: int, fmt: str) -> Response:
    """Every annotator's judgments with notes and times, as CSV or JSON Lines."""
    test_set = get_test_set_or_404(test_set_id)
    if fmt not in team.EXPORT_FORMATS:
        abort(404)
    mimetype = "text/csv" if fmt == "csv" else "application/x-ndjson"
    name = team.export_filename(test_set, "judgments", fmt)
    return Response(
        stream_with_context(team.judgment_chunks(test_set, fmt)),
        mimetype=mimetype,
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@bp.get("/export/qrels")
@admin_required
def export_qrels(test_set_id: int) -> Response:
    """The grades scoring uses, as TREC qrels (?policy= another aggregation policy)."""
    test_set = get_test_set_or_404(test_set_id)
    policy = request.args.get("policy") or None
    if policy is not None and policy not in POLICIES:
        abort(400, description=f"policy must be one of {', '.join(POLICIES)}")
    name = team.export_filename(test_set, f"qrels-{policy or test_set.aggregation}", "txt")
    return Response(
        live.qrels_text(test_set, policy),
        mimetype="text/plain",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
