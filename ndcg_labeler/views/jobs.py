"""Job pages: a job's progress (polled while it runs), cancel, and the list of jobs."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from ndcg_labeler.models import Job
from ndcg_labeler.services import jobs
from ndcg_labeler.views._scoring import page_arg

bp = Blueprint("jobs", __name__, url_prefix="/jobs")


def _job_or_404(job_id: int) -> Job:
    """The job, or 404 when it does not exist or is someone else's (admins see every job)."""
    job = jobs.get_job(job_id)
    if job is None or not jobs.can_see(current_user, job):
        abort(404)
    return job


def _context(job: Job) -> dict[str, object]:
    return {
        "job": job,
        "figures": jobs.figures(job),
        "finished": jobs.is_finished(job),
        "title": jobs.title(job.kind),
        "phases": jobs.PHASES,
        "stopping": jobs.stopping(job),
    }


@bp.get("/")
def index() -> str:
    """Jobs, newest first: all of them for admins, one's own for everyone else."""
    jobs.recover()
    page = jobs.list_jobs(current_user, page_arg())
    return render_template("jobs/index.html", page=page, title=jobs.title)


@bp.get("/<int:job_id>")
def show(job_id: int) -> str:
    """A job: state, progress bar, speed, ETA, and its report or error once it ended."""
    job = _job_or_404(job_id)
    if job.state == "running":
        jobs.recover()
        job = _job_or_404(job_id)  # as it is now: recovery may have ended it
    return render_template("jobs/show.html", **_context(job))


@bp.get("/<int:job_id>/status")
def status(job_id: int) -> str:
    """The fragment htmx polls every second while the job runs."""
    job = _job_or_404(job_id)
    return render_template("jobs/_status.html", **_context(job))


@bp.post("/<int:job_id>/cancel")
def cancel(job_id: int) -> Response:
    """Cancel a queued job, or stop a running one (nothing of it is written)."""
    job = _job_or_404(job_id)
    outcome = jobs.cancel(job, current_user)
    if outcome == "cancelled":
        flash("Job cancelled: nothing of it is written.", "success")
    elif outcome == "stopping":
        # Not "cancelled" yet: the job stops at its next step, and one that ends first is kept.
        # Not "rolled back": an import's work is, but a judge keeps the answers it received.
        flash(
            "Cancelling: the job stops at its next step; this page then says what it kept "
            "(a job that finishes first keeps its result).",
            "success",
        )
    else:
        flash("The job had already ended.", "info")
    return redirect(url_for("jobs.show", job_id=job.id))
