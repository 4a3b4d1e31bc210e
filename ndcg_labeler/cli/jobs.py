"""`flask jobs worker|list|cancel|recover|tick`: the job worker, and a look at the jobs."""

from __future__ import annotations

import logging

import click
from flask import current_app
from flask.cli import AppGroup

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.services import noun


@click.group("jobs", cls=AppGroup)
def jobs_group() -> None:
    """Run the job worker (large imports and uploads) and look at jobs."""


@jobs_group.command("worker")
@click.option(
    "--threads", type=int, default=None, help="Jobs run at once [NDCG_JOB_THREADS, default 2]."
)
def worker(threads: int | None) -> None:
    """Run the job worker in the foreground until Ctrl-C (SIGINT/SIGTERM stop it)."""
    from ndcg_labeler.services import jobs

    app = current_app._get_current_object()  # type: ignore[attr-defined]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    recovered = jobs.recover()
    if recovered:
        count = len(recovered)
        marked = f"Marked {count} interrupted {noun(count, 'job')} as failed: {recovered}"
        click.echo(marked, err=True)
    url = jobs.storage_url(app)
    where = "Redis" if url else "SQLite in the instance folder"
    click.echo(f"Job worker: queue '{app.config['NDCG_JOBS_QUEUE']}' in {where}.", err=True)
    count = threads or int(app.config.get("NDCG_JOB_THREADS", 2))
    jobs.worker(app, count).run()


@jobs_group.command("list")
@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    default=50,
    show_default=True,
    help="How many of the newest jobs to print.",
)
@cli_errors
def list_command(limit: int) -> None:
    """Print the latest jobs, newest first: id, kind, state, progress and message (a line
    each, tab-separated); how many there are in all, when more, goes to stderr."""
    from ndcg_labeler.services import jobs

    # Through the service: a running job's progress may be newer in the queue than in its row.
    found = jobs.list_jobs(None, 1, limit)
    for job in found.items:
        share = f"{100 * job.done / job.total:.0f}%" if job.total else "-"
        click.echo(f"{job.id}\t{job.kind}\t{job.state}\t{share}\t{job.error or job.message}")
    total = found.total or 0
    if not total:
        click.echo("No jobs yet.", err=True)
    elif total > len(found.items):
        more = "shows them all" if total <= 1000 else "shows the newest 1,000; the page /jobs all"
        click.echo(
            f"{len(found.items)} of {total:,} jobs shown, newest first "
            f"(--limit {min(total, 1000)} {more}).",
            err=True,
        )


@jobs_group.command("cancel")
@click.argument("job_id", type=int)
@cli_errors
def cancel(job_id: int) -> None:
    """Cancel a queued job, or ask a running one to stop, as its page's Cancel button does."""
    from ndcg_labeler.services import ServiceError, jobs

    job = jobs.get_job(job_id)
    if job is None:
        raise ServiceError(f"no job {job_id} (flask jobs list shows the latest)")
    name = f"job {job.id} ({jobs.title(job.kind)})"
    outcome = jobs.cancel(job, None)
    if outcome == "cancelled":
        click.echo(f"Cancelled {name}: nothing of it is written.")
    elif outcome == "stopping":
        click.echo(
            f"Cancelling {name}: it stops at its next step; `flask jobs list` then says what "
            "it kept (a job that finishes first keeps its result)."
        )
    else:
        raise ServiceError(f"{name} had already ended ({job.state})")


@jobs_group.command("recover")
@cli_errors
def recover() -> None:
    """Mark failed the running jobs whose worker died (the worker does this when it starts)."""
    from ndcg_labeler.services import jobs

    ids = jobs.recover()
    marked = f"Marked {len(ids)} interrupted {noun(len(ids), 'job')} as failed."
    click.echo(marked if ids else "Nothing to recover.")


@jobs_group.command("tick")
@cli_errors
def tick() -> None:
    """Queue the scheduled evaluations due now (the worker does this every minute)."""
    from ndcg_labeler.services import jobs

    queued = jobs.tick()
    for job in queued:
        params = job.params or {}
        click.echo(f"Queued job {job.id}: {params.get('endpoint')} into {params.get('series')}.")
    if not queued:
        click.echo("No scheduled evaluation is due.")
