"""Test set pages: overview, queries and chunks; admins create, edit, share and import."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from flask import Blueprint, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user
from werkzeug.datastructures import FileStorage
from werkzeug.wrappers import Response
from wtforms.fields.choices import SelectChoice

from ndcg_labeler.formats import FormatError
from ndcg_labeler.forms.testsets import (
    AnnotatorsForm,
    ImportForm,
    PeerImportForm,
    SettingsForm,
    TestSetCreateForm,
)
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import (
    ServiceError,
    checklist,
    imports,
    interop,
    jobs,
    labeling,
    paginate,
    testsets,
)
from ndcg_labeler.views import interop_requests
from ndcg_labeler.views._scoring import page_arg
from ndcg_labeler.views.access import admin_required, get_test_set_or_404

bp = Blueprint("testsets", __name__, url_prefix="/test-sets")

IMPORT_FIELDS = ("queries", "corpus", "pool", "qrels")


@bp.route("/new", methods=["GET", "POST"])
@admin_required
def new() -> str | Response:
    """Create a test set."""
    form = TestSetCreateForm()
    if form.validate_on_submit():
        try:
            test_set = testsets.create_test_set(
                form.name.data or "", int(form.scale.data or 3), actor=current_user
            )
        except ServiceError as exc:
            form.name.errors.append(str(exc))
        else:
            flash(f"Test set {test_set.name} created. Import its files next.", "success")
            return redirect(url_for("testsets.import_page", test_set_id=test_set.id))
    return render_template("testsets/new.html", form=form)


@bp.get("/<int:test_set_id>")
def show(test_set_id: int) -> str:
    """Overview: counts, progress, grade scale and guidelines."""
    test_set = get_test_set_or_404(test_set_id)
    return render_template(
        "testsets/show.html",
        test_set=test_set,
        checklist=checklist.checklist(
            test_set, current_user, current_app.config["NDCG_POOL_JOB_PAIRS"]
        ),
        summary=testsets.summary(test_set),
        progress=labeling.progress(test_set, current_user),
        labeling_url=url_for("labeling.next", test_set_id=test_set.id),
        members=testsets.members(test_set) if current_user.is_admin else [],
    )


def _listing(
    test_set: TestSet, template: str, find: Callable[..., Any], state: str, **extra: object
) -> str | tuple[str, int]:
    """A searchable, filterable list page (400 with the reason for an unknown filter)."""
    search = request.args.get("q", "")
    try:
        page = find(test_set, page_arg(), search=search, state=state)
    except ServiceError as exc:
        flash(str(exc), "error")
        page = None
    found = render_template(
        template, test_set=test_set, page=page, search=search, state=state, **extra
    )
    return found if page is not None else (found, 400)


@bp.get("/<int:test_set_id>/queries")
def queries(test_set_id: int) -> str | tuple[str, int]:
    """The test set's queries with their pool sizes: search and filter by grade state."""
    return _listing(
        get_test_set_or_404(test_set_id),
        "testsets/queries.html",
        testsets.queries_page,
        request.args.get("state", ""),
        query_states=testsets.QUERY_STATES,
    )


@bp.get("/<int:test_set_id>/chunks")
def chunks(test_set_id: int) -> str | tuple[str, int]:
    """The test set's chunks: search and filter (graded, not yet, without text)."""
    missing = request.args.get("missing") == "1"  # the overview's link to chunks without text
    return _listing(
        get_test_set_or_404(test_set_id),
        "testsets/chunks.html",
        testsets.chunks_page,
        "missing" if missing else request.args.get("state", ""),
        chunk_states=testsets.CHUNK_STATES,
    )


def _settings_form(test_set: TestSet) -> SettingsForm:
    """The settings form, prefilled on GET, with choices that depend on the scale."""
    form = SettingsForm()
    if request.method == "GET":
        current = testsets.settings_of(test_set)
        form.name.data = current.name
        form.guidelines.data = current.guidelines
        form.aggregation.data = current.aggregation
        form.relevance_threshold.data = str(current.relevance_threshold)
        form.judgments_per_pair.data = current.judgments_per_pair
        form.disagreement_threshold.data = current.disagreement_threshold
        form.show_machine_suggestions.data = current.show_machine_suggestions
        form.series_separator.data = current.series_separator
        while len(form.grades):
            form.grades.pop_entry()
        for label in current.grade_labels:
            form.grades.append_entry(label)
    form.fit_scale(test_set.scale_max)
    form.aggregation.choices = [SelectChoice(p, p) for p in testsets.aggregation_policies()]
    labels = test_set.grade_labels
    form.relevance_threshold.choices = [
        SelectChoice(str(g), f"{g} ({labels[g]['name']})" if g < len(labels) else str(g))
        for g in range(1, test_set.scale_max + 1)
    ]
    return form


@bp.route("/<int:test_set_id>/settings", methods=["GET", "POST"])
@admin_required
def settings(test_set_id: int) -> str | Response:
    """Edit name, grade names and definitions, guidelines and the scoring policy."""
    test_set = get_test_set_or_404(test_set_id)
    form = _settings_form(test_set)
    if form.validate_on_submit():
        new = testsets.Settings(
            name=form.name.data or "",
            grade_labels=[dict(entry.data) for entry in form.grades],
            guidelines=form.guidelines.data or "",
            aggregation=form.aggregation.data or "",
            relevance_threshold=int(form.relevance_threshold.data or 0),
            judgments_per_pair=int(form.judgments_per_pair.data or 0),
            disagreement_threshold=int(form.disagreement_threshold.data or 0),
            show_machine_suggestions=bool(form.show_machine_suggestions.data),
            series_separator=form.series_separator.data or "",
        )
        try:
            testsets.update_settings(test_set, new, current_user)
        except ServiceError as exc:
            form.field_for(exc.field).errors.append(str(exc))
        else:
            flash("Settings saved.", "success")
            return redirect(url_for("testsets.show", test_set_id=test_set.id))
    return render_template("testsets/settings.html", test_set=test_set, form=form)


ANNOTATORS_PER_PAGE = 50  # as the People table: a checkbox list of hundreds is unusable


@bp.route("/<int:test_set_id>/annotators", methods=["GET", "POST"])
@admin_required
def annotators(test_set_id: int) -> str | Response:
    """Choose which annotators may label the test set, 50 people a page (as People)."""
    test_set = get_test_set_or_404(test_set_id)
    form = AnnotatorsForm()
    everyone = testsets.annotator_candidates()
    shown = paginate(everyone, page_arg(), ANNOTATORS_PER_PAGE)
    candidates = list(shown.items)
    form.annotators.choices = [SelectChoice(str(u.id), u.username) for u in candidates]
    if request.method == "GET":
        form.annotators.data = sorted(testsets.member_ids(test_set))
    if form.validate_on_submit():
        try:
            # Only this page's people were offered: the others keep their access.
            granted, revoked = testsets.set_members(
                test_set,
                form.annotators.data or [],
                current_user,
                among=[user.id for user in candidates],
            )
        except ServiceError as exc:
            form.annotators.errors.append(str(exc))
        else:
            flash(f"Annotators saved: {granted} added, {revoked} removed.", "success")
            return redirect(url_for("testsets.show", test_set_id=test_set.id))
    return render_template(
        "testsets/annotators.html", test_set=test_set, form=form, candidates=shown
    )


def _upload(storage: FileStorage | None) -> imports.ImportFile | None:
    """The uploaded file of one input, or None when that input was left empty."""
    if storage is None or not storage.filename:
        return None
    # Browsers send a base name; strip any path a client may add anyway.
    name = os.path.basename(storage.filename.replace("\\", "/")) or "upload"
    return imports.ImportFile(storage.stream, name)


def _import_later(
    test_set: TestSet, form: ImportForm, files: dict[str, imports.ImportFile]
) -> Response:
    """Spool the files and queue the import; the browser goes to the job's page."""
    job = jobs.enqueue_import(
        test_set,
        {name: (f.filename, f.source) for name, f in files.items()},  # type: ignore[misc]
        form.source.data or None,
        current_user,
        only_referenced=bool(form.only_referenced.data),
    )
    return redirect(url_for("jobs.show", job_id=job.id))


@bp.route("/<int:test_set_id>/import", methods=["GET", "POST"])
@admin_required
def import_page(test_set_id: int) -> str | Response | tuple[str, int]:
    """Upload queries, chunks, a pool and qrels; show the counts or the line-numbered error.

    Files larger than NDCG_JOB_THRESHOLD_MB in all are imported by the job worker instead: the
    request saves them, queues the job and redirects to its progress page.
    """
    test_set = get_test_set_or_404(test_set_id)
    form = ImportForm()
    report = None
    if form.validate_on_submit():
        files = {name: _upload(getattr(form, name).data) for name in IMPORT_FIELDS}
        given = {name: f for name, f in files.items() if f is not None}
        size = sum(jobs.stream_size(f.source) for f in given.values())  # type: ignore[arg-type]
        try:
            if given and size > jobs.threshold_bytes():
                return _import_later(test_set, form, given)
            report = imports.import_files(
                test_set,
                **files,
                source=form.source.data or None,
                actor_id=current_user.id,
                only_referenced=bool(form.only_referenced.data),
            )
        except FormatError as exc:
            field = next(
                (n for n, f in files.items() if f is not None and f.filename == exc.filename),
                "queries",
            )
            getattr(form, field).errors.append(f"{exc} — nothing was imported.")
        except ServiceError as exc:
            form.queries.errors.append(f"{exc} — nothing was imported.")
    return _import_answer(test_set, form, PeerImportForm(formdata=None, prefix="peer"), report)


def _import_answer(
    test_set: TestSet,
    form: ImportForm,
    peer_form: PeerImportForm,
    report: imports.ImportReport | None,
) -> str | tuple[str, int]:
    """The import page with both forms; a refused import answers 422, as a refused upload."""
    page = render_template(
        "testsets/import.html",
        test_set=test_set,
        form=form,
        peer_form=peer_form,
        report=report,
        nothing_new=interop.NOTHING_NEW,
        summary=testsets.summary(test_set),
    )
    return (page, 422) if request.method == "POST" and report is None else page


@bp.route("/<int:test_set_id>/import/peer", methods=["POST"])
@admin_required
def import_peer(test_set_id: int) -> str | tuple[str, int] | Response:
    """Import one Quepid or SRW file, or an ir_datasets dataset; counts or the error.

    A peer file larger than NDCG_JOB_THRESHOLD_MB is checked here, then imported by the job
    worker, as the other imports are; so is an ir_datasets dataset whose cached files are
    larger (or of a size that cannot be told)."""
    test_set = get_test_set_or_404(test_set_id)
    form = PeerImportForm(prefix="peer")  # its own ids beside the import form's
    report = None
    if form.validate_on_submit():
        fmt = form.fmt.data or ""
        storage: FileStorage | None = form.file.data
        dataset = (form.dataset.data or "").strip() if fmt == "ir-datasets" else ""
        # The file field named as on the API (srw-judgments -> srw_judgments).
        chose_file = fmt != "ir-datasets" and storage is not None and bool(storage.filename)
        peers = {fmt.replace("-", "_"): storage} if chose_file else {}
        try:
            if not peers and not dataset:
                raise ServiceError("choose the file (or name the ir_datasets dataset) to import")
            interop_requests.check_rating_map(form.rating_map.data, peers)
            if chose_file and jobs.stream_size(storage.stream) > jobs.threshold_bytes():  # type: ignore[union-attr]
                job = interop_requests.peer_later(
                    test_set,
                    form.fmt.data or "",
                    storage,  # type: ignore[arg-type]
                    rating_map=form.rating_map.data or None,
                    source=form.source.data or None,
                    user=current_user,
                )
                return redirect(url_for("jobs.show", job_id=job.id))
            source = form.source.data or None
            job = interop_requests.dataset_later(
                test_set, peers, dataset, False, source=source, user=current_user
            )
            if job is not None:
                return redirect(url_for("jobs.show", job_id=job.id))
            report = interop_requests.import_peer(
                test_set,
                peers,
                dataset,
                False,
                rating_map=form.rating_map.data or None,
                source=form.source.data or None,
                actor_id=current_user.id,
            )
        except (FormatError, ServiceError) as exc:
            form.fmt.errors.append(f"{exc} — nothing was imported.")  # type: ignore[attr-defined]
    return _import_answer(test_set, ImportForm(formdata=None), form, report)
