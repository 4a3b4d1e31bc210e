"""A test set's live retriever endpoints in the browser (admins): define, try, fetch, schedule."""

from __future__ import annotations

from flask import Blueprint, abort, current_app, flash, redirect, render_template, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.forms.endpoints import (
    EndpointEditForm,
    EndpointForm,
    FetchForm,
    ScheduleForm,
    TryForm,
)
from ndcg_labeler.models import RetrieverEndpoint, TestSet
from ndcg_labeler.services import ServiceError, endpoints, jobs, series
from ndcg_labeler.views.access import admin_required, get_test_set_or_404

bp = Blueprint("endpoints", __name__, url_prefix="/test-sets/<int:test_set_id>/endpoints")


def _endpoint_or_404(test_set: TestSet, name: str) -> RetrieverEndpoint:
    """The test set's endpoint of this name, or 404."""
    try:
        return endpoints.require_endpoint(test_set, name)
    except ServiceError:
        abort(404)


@bp.route("/", methods=["GET", "POST"])
@admin_required
def index(test_set_id: int) -> str | Response:
    """The endpoints and the form that adds one."""
    test_set = get_test_set_or_404(test_set_id)
    form = EndpointForm()
    if form.validate_on_submit():
        try:
            endpoint = endpoints.add_endpoint(test_set, **form.settings(), actor=current_user)
        except ServiceError as exc:
            form.name.errors.append(str(exc))
        else:
            flash(f"Endpoint {endpoint.name} added. Try a query before fetching.", "success")
            return redirect(url_for("endpoints.show", test_set_id=test_set.id, name=endpoint.name))
    return render_template(
        "endpoints/index.html",
        test_set=test_set,
        endpoints=endpoints.list_endpoints(test_set),
        form=form,
    )


@bp.route("/<name>", methods=["GET", "POST"])
@admin_required
def show(test_set_id: int, name: str) -> str | Response:
    """One endpoint: try a query (the mapped results or the exact error), fetch a run."""
    test_set = get_test_set_or_404(test_set_id)
    endpoint = _endpoint_or_404(test_set, name)
    try_form, fetch_form = TryForm(prefix="try"), FetchForm(prefix="fetch")
    schedule_form = ScheduleForm(prefix="schedule")
    if not schedule_form.is_submitted():
        schedule_form.schedule.data = endpoint.schedule
        schedule_form.series.data = endpoint.schedule_series
        schedule_form.k.data = endpoint.schedule_k
    hits, error, try_limit = None, None, None
    if try_form.submit.data and try_form.validate_on_submit():
        try_limit = endpoints.try_limit(endpoint, current_app.config["NDCG_WEB_TIMEOUT"])
        try:
            hits = endpoints.try_query(endpoint, try_form.query.data or "", timeout=try_limit)
        except ServiceError as exc:
            error = str(exc)
    elif fetch_form.submit.data and fetch_form.validate_on_submit():
        try:
            job = jobs.enqueue_fetch(
                test_set,
                endpoint.name,
                fetch_form.run.data or "",
                fetch_form.k.data or endpoints.DEFAULT_K,
                bool(fetch_form.accept_partial.data),
                current_user,
            )
        except ServiceError as exc:
            fetch_form.run.errors.append(str(exc))
        else:
            return redirect(url_for("jobs.show", job_id=job.id))
    elif schedule_form.submit.data and schedule_form.validate_on_submit():
        try:
            series.set_schedule(
                test_set,
                endpoint.name,
                schedule_form.schedule.data or "",
                schedule_form.series.data or "",
                schedule_form.k.data or endpoints.DEFAULT_K,
                current_user,
            )
        except ServiceError as exc:
            schedule_form.schedule.errors.append(str(exc))
        else:
            flash(f"Schedule of {endpoint.name} saved.", "success")
            return redirect(url_for("endpoints.show", test_set_id=test_set.id, name=name))
    return render_template(
        "endpoints/show.html",
        test_set=test_set,
        endpoint=endpoint,
        snapshot=endpoints.snapshot(endpoint),
        try_form=try_form,
        fetch_form=fetch_form,
        schedule_form=schedule_form,
        next_run=series.next_run(endpoint) if endpoint.schedule else None,
        hits=hits,
        error=error,
        # Said with the result when the page used a shorter timeout than fetches do.
        try_limit=try_limit if try_limit is not None and try_limit < endpoint.timeout else None,
    )


@bp.route("/<name>/edit", methods=["GET", "POST"])
@admin_required
def edit(test_set_id: int, name: str) -> str | Response:
    """The add form, prefilled: change (or rename) an endpoint; fetched runs keep theirs."""
    test_set = get_test_set_or_404(test_set_id)
    endpoint = _endpoint_or_404(test_set, name)
    form = EndpointEditForm.of(endpoints.settings_of(endpoint))
    if form.validate_on_submit():
        try:
            endpoints.edit_endpoint(test_set, endpoint, current_user, **form.settings())
        except ServiceError as exc:
            form.name.errors.append(str(exc))
        else:
            flash(f"Endpoint {endpoint.name} saved. Try a query before fetching.", "success")
            return redirect(url_for("endpoints.show", test_set_id=test_set.id, name=endpoint.name))
    return render_template(
        "endpoints/edit.html",
        test_set=test_set,
        endpoint=endpoint,
        header_names=sorted(endpoint.headers or {}),
        form=form,
    )


@bp.post("/<name>/delete")
@admin_required
def delete(test_set_id: int, name: str) -> Response:
    """Delete an endpoint (admins), unless it is scheduled or a job will ask it."""
    test_set = get_test_set_or_404(test_set_id)
    endpoint = _endpoint_or_404(test_set, name)
    try:
        endpoints.delete_endpoint(test_set, endpoint, current_user)
    except ServiceError as exc:
        flash(f"Not deleted: {exc}.", "error")
        return redirect(url_for("endpoints.show", test_set_id=test_set.id, name=name))
    flash(f"Endpoint {name} deleted. Runs fetched from it keep their snapshot of it.", "success")
    return redirect(url_for("endpoints.index", test_set_id=test_set.id))
