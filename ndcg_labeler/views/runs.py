"""Run pages: the runs of a test set with their mean NDCG@10, upload (admins), a run, delete."""

from __future__ import annotations

import os

from flask import (
    Blueprint,
    abort,
    current_app,
    flash,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.formats import FormatError
from ndcg_labeler.forms.runs import RunUploadForm
from ndcg_labeler.services import ServiceError, interop, jobs, live, noun, runs, whole_number
from ndcg_labeler.views import interop_requests
from ndcg_labeler.views._run_lists import list_filter, shown_page
from ndcg_labeler.views.access import admin_required, get_test_set_or_404, may_see_grades

bp = Blueprint("runs", __name__, url_prefix="/test-sets/<int:test_set_id>/runs")

TOP_QUERIES = 20
# Runs per page of the list (each shown run is scored; the others are not read).
PER_PAGE = 25


def _options() -> live.ScoreOptions:
    """Scoring options from the query string (k, gain, ideal); 400 when malformed."""
    try:
        return live.parse_options({name: request.args.get(name) for name in ("k", "gain", "ideal")})
    except ServiceError as exc:
        abort(400, description=str(exc))


# The names the runs page suggests for its optional columns (any other name works too).
SUGGESTED_MEASURES = (
    "nDCG@5",
    "nDCG",
    "P@5",
    "P(rel=2)@5",
    "R@100",
    "AP",
    "AP@100",
    "RR",
    "RR@10",
    "Rprec",
    "bpref",
    "infAP",
    "Success@10",
    "Judged@10",
)


@bp.get("/")
def index(test_set_id: int) -> str:
    """One page of the test set's runs (search, tag, sort, archive filter), each with its
    mean NDCG@10 and the queries the mean covers, plus the mean of each measure picked with
    ?measure= (optional columns): only the page's runs are scored."""
    test_set = get_test_set_or_404(test_set_id)
    try:
        wanted, asked = list_filter(request.args, PER_PAGE)
    except ServiceError as exc:
        abort(400, description=str(exc))
    found, page = shown_page(test_set, wanted, asked)
    names = [n for v in request.args.getlist("measure") for n in v.split(",") if n.strip()]
    columns: dict[int, list[live.MeasureValues]] = {}
    error = None
    try:
        columns = {
            run.id: live.named_measures(run, names, live.ScoreOptions()) for run in found.runs
        }
    except ServiceError as exc:
        error = str(exc)
    picked = ", ".join(n.strip() for n in names)
    return render_template(
        "runs/index.html",
        test_set=test_set,
        runs=found.runs,
        found=found,
        list_args={
            name: request.args[name]
            for name in ("q", "tag", "sort", "archived")
            if request.args.get(name)
        }
        | ({"measure": picked} if picked else {}),
        page=page,
        asked=asked,
        pages=-(-found.total // PER_PAGE),
        sorts=runs.SORTS,
        tags=runs.test_set_tags(test_set),
        scores=live.listed_scores(found.runs),
        uploaders=runs.uploaders(found.runs),
        columns=columns,
        picked=picked,
        measure_error=error,
        suggested=SUGGESTED_MEASURES,
    )


@bp.post("/bm25")
@admin_required
def bm25(test_set_id: int) -> Response:
    """Create a BM25 run of the test set's corpus (admins); a job for a large corpus."""
    test_set = get_test_set_or_404(test_set_id)
    form = request.form
    try:
        settings = runs.Bm25Settings(
            depth=whole_number(form.get("depth", "100"), "depth"),
            k1=_decimal(form.get("k1", "0.9"), "k1"),
            b=_decimal(form.get("b", "0.4"), "b"),
        ).check()
        chunks = runs.corpus_size(test_set)
        if chunks > current_app.config["NDCG_BM25_JOB_CHUNKS"]:
            job = jobs.enqueue_bm25(test_set, form.get("name", ""), settings, current_user)
            return redirect(url_for("jobs.show", job_id=job.id))
        run = runs.create_bm25_run(test_set, form.get("name", ""), current_user, settings)
    except ServiceError as exc:
        flash(f"Could not create the BM25 run: {exc}", "error")
        return redirect(url_for("runs.index", test_set_id=test_set.id))
    flash(f"Run {run.name} created: {run.notes}.", "success")
    return redirect(url_for("runs.show", test_set_id=test_set.id, run_id=run.id))


def _decimal(text: str, name: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ServiceError(f"{name} must be a number, not '{text}'") from None


def _xhr() -> bool:
    """The upload page's script posts with XMLHttpRequest and wants JSON back."""
    return request.headers.get("X-Requested-With") == "XMLHttpRequest"


@bp.route("/upload", methods=["GET", "POST"])
@admin_required
def upload(test_set_id: int) -> str | Response | tuple[object, int]:
    """Upload a run; a bad file gets its file:line error and nothing is stored.

    A file larger than NDCG_JOB_THRESHOLD_MB is stored by the job worker instead: the request
    saves it, queues the job and sends the browser to the job's progress page.
    """
    test_set = get_test_set_or_404(test_set_id)
    form = RunUploadForm()
    if form.validate_on_submit():
        storage = form.file.data
        filename = os.path.basename(storage.filename or "") or "upload"
        try:
            name = runs.clean_name(form.name.data or "", filename)
            if runs.name_taken(test_set, name):
                raise ServiceError(f"this test set already has a run named '{name}'")
        except ServiceError as exc:
            form.name.errors.append(str(exc))
        else:
            given = {
                "depth": form.depth.data,
                "notes": form.notes.data or "",
                "series": form.series.data or "",
            }
            try:
                if form.format.data:  # a Quepid snapshot: read in this request, as the API does
                    run = interop.upload_quepid_snapshot(
                        test_set,
                        interop_requests.peer_file(storage),
                        name,
                        current_user,
                        **given,
                    )
                elif jobs.stream_size(storage.stream) > jobs.threshold_bytes():
                    # Large: the worker stores it; this request only saves the file.
                    job = jobs.enqueue_upload(
                        test_set,
                        storage.stream,
                        filename,
                        name,
                        current_user,
                        **given,
                    )
                    target = url_for("jobs.show", job_id=job.id)
                    return jsonify(ok=True, redirect=target) if _xhr() else redirect(target)
                else:
                    run = runs.upload_run(
                        test_set,
                        storage.stream,
                        filename,
                        name,
                        current_user,
                        **given,
                    )
            except (FormatError, ServiceError) as exc:
                form.file.errors.append(f"{exc} — nothing was stored.")
            else:
                flash(f"Run {run.name} uploaded.", "success")
                target = url_for("runs.show", test_set_id=test_set.id, run_id=run.id)
                return jsonify(ok=True, redirect=target) if _xhr() else redirect(target)
    failed = request.method == "POST"
    if failed and _xhr():
        errors = [
            {"field": f.id, "label": f.label.text, "errors": f.errors} for f in form if f.errors
        ]
        return jsonify(ok=False, errors=errors), 422
    page = render_template("runs/upload.html", test_set=test_set, form=form)
    return (page, 422) if failed else page


@bp.get("/<int:run_id>")
def show(test_set_id: int, run_id: int) -> str:
    """A run: what was uploaded, what validation reported, and its scores at k."""
    test_set = get_test_set_or_404(test_set_id)
    run = runs.get_run(test_set, run_id) or abort(404)
    try:
        result = live.score_run(run, _options())
    except ServiceError as exc:  # a cutoff deeper than an archived run kept
        abort(400, description=str(exc))
    # Per-query DCG, IDCG and relevant counts are others' grades summed up: on a blind set
    # annotators keep the run's mean only, as on the dashboard's run table.
    per_query = may_see_grades(test_set)
    return render_template(
        "runs/show.html",
        test_set=test_set,
        run=run,
        result=result,
        per_query=per_query,
        top=[result.row(i) for i in result.by_gap()[:TOP_QUERIES]] if per_query else [],
        uploader=runs.uploaders([run]).get(run.id),
        k_choices=live.k_choices(result.k, [run]),
    )


@bp.post("/<int:run_id>/curate")
@admin_required
def mark(test_set_id: int, run_id: int) -> Response:
    """Set a run's tags (space- or comma-separated) and pin or unpin it (admins); the path
    sorts before delete so the authorization matrix meets the run still there."""
    test_set = get_test_set_or_404(test_set_id)
    run = runs.get_run(test_set, run_id) or abort(404)
    wanted = request.form.get("tags", "").replace(",", " ").split()
    try:
        runs.mark_run(
            run,
            add=wanted,
            remove=[tag for tag in run.tag_names if tag not in wanted],
            pinned=request.form.get("pinned") == "1",
            actor=current_user,
        )
    except ServiceError as exc:
        flash(f"Could not change the run: {exc}", "error")
    else:
        flash(f"Run {run.name} saved.", "success")
    return redirect(url_for("runs.show", test_set_id=test_set.id, run_id=run.id))


@bp.post("/<int:run_id>/archive")
@admin_required
def archive(test_set_id: int, run_id: int) -> Response:
    """Archive a run to its top N entries per query (admins; the page asks to confirm)."""
    test_set = get_test_set_or_404(test_set_id)
    run = runs.get_run(test_set, run_id) or abort(404)
    try:
        keep = whole_number(request.form.get("keep", ""), "keep")
        dropped = runs.archive_run(run, keep, current_user)
    except ServiceError as exc:
        flash(f"Could not archive the run: {exc}", "error")
    else:
        flash(
            f"Run {run.name} archived: it keeps its top {run.kept_depth} entries per query "
            f"({dropped} {noun(dropped, 'entry', 'entries')} dropped).",
            "success",
        )
    return redirect(url_for("runs.show", test_set_id=test_set.id, run_id=run.id))


@bp.post("/<int:run_id>/delete")
@admin_required
def delete(test_set_id: int, run_id: int) -> Response:
    """Delete a run (admins)."""
    test_set = get_test_set_or_404(test_set_id)
    run = runs.get_run(test_set, run_id) or abort(404)
    name = run.name
    try:
        runs.delete_run(run, current_user)
    except ServiceError as exc:
        flash(f"Could not delete the run: {exc}", "error")
        return redirect(url_for("runs.show", test_set_id=test_set.id, run_id=run.id))
    flash(f"Run {name} deleted.", "success")
    return redirect(url_for("runs.index", test_set_id=test_set.id))
