"""`flask endpoints add|edit|delete|list|try|fetch|schedule`: live retriever endpoints.

`endpoints fetch` works in this process (a progress bar on stderr when it is a terminal) and
prints its JSON when done.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from flask.cli import AppGroup

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.cli._progress import terminal_progress
from ndcg_labeler.formats import PRESETS
from ndcg_labeler.services import endpoints, noun, testsets

CONCURRENCY_HELP = f"Queries asked at a time, 1 to {endpoints.MAX_CONCURRENCY}."
TIMEOUT_HELP = f"Seconds per request, more than 0 and at most {endpoints.MAX_TIMEOUT:g}."


@click.group("endpoints", cls=AppGroup)
def endpoints_group() -> None:
    """Live retriever endpoints of a test set: define, change, delete, list, try, fetch a run."""


@endpoints_group.command("add")
@click.argument("testset")
@click.argument("name")
@click.option("--url", required=True, help="With {query}, {qid} and {k} placeholders.")
@click.option("--method", type=click.Choice(["GET", "POST"]), default="GET", show_default=True)
@click.option("--body", "body_file", type=click.Path(dir_okay=False), help="JSON body template.")
@click.option(
    "--header",
    "headers",
    multiple=True,
    help="'Name: value', ${ENV_VAR} for secrets (names allowed by NDCG_SECRET_ENV).",
)
@click.option("--hits", default="", help="JMESPath to the list of hits.")
@click.option("--id", "id_expr", default="", help="JMESPath to a hit's docid.")
@click.option("--score", default="", help="JMESPath to a hit's score (rank order if missing).")
@click.option("--text", default="", help="JMESPath to a hit's chunk text.")
@click.option("--preset", "preset_name", type=click.Choice(PRESETS), default=None)
@click.option("--text-field", default="", help="With --preset: the field holding the text.")
# Limits are read as text by the service (read_limits), so a value that is no number is refused
# in the same words as one out of range, here and in the browser form.
@click.option(
    "--concurrency",
    default=str(endpoints.DEFAULT_CONCURRENCY),
    show_default=True,
    help=CONCURRENCY_HELP,
)
@click.option(
    "--rpm",
    default=str(endpoints.DEFAULT_RPM),
    help="Requests per minute (0: no limit).",
)
@click.option(
    "--timeout",
    default=f"{endpoints.DEFAULT_TIMEOUT:g}",
    show_default=True,
    help=TIMEOUT_HELP,
)
@cli_errors
def add(
    testset: str,
    name: str,
    url: str,
    method: str,
    body_file: str | None,
    headers: tuple[str, ...],
    hits: str,
    id_expr: str,
    score: str,
    text: str,
    preset_name: str | None,
    text_field: str,
    concurrency: str,
    rpm: str,
    timeout: str,
) -> None:
    """Define endpoint NAME of TESTSET (header secrets stay in the environment)."""
    endpoint = endpoints.add_endpoint(
        testsets.require_by_name(testset),
        name,
        url,
        method=method,
        body=_read_body(Path(body_file)) if body_file else "",
        headers=list(headers),
        hits=hits,
        id_expr=id_expr,
        score=score,
        text=text,
        preset_name=preset_name or "",
        text_field=text_field,
        concurrency=concurrency,
        requests_per_minute=rpm,
        timeout=timeout,
    )
    click.echo(f"Endpoint {endpoint.name} added ({endpoint.method} {endpoint.url}).")


@endpoints_group.command("edit")
@click.argument("testset")
@click.argument("name")
@click.option("--name", "new_name", default=None, help="A new name (one the test set has free).")
@click.option("--url", default=None, help="With {query}, {qid} and {k} placeholders.")
@click.option("--method", type=click.Choice(["GET", "POST"]), default=None)
@click.option("--body", "body_file", type=click.Path(dir_okay=False), help="JSON body template.")
@click.option(
    "--header",
    "headers",
    multiple=True,
    help="'Name: value'; given once or more, these replace all the endpoint's headers.",
)
@click.option("--no-headers", is_flag=True, help="Remove all the endpoint's headers.")
@click.option("--hits", default=None, help="JMESPath to the list of hits.")
@click.option("--id", "id_expr", default=None, help="JMESPath to a hit's docid.")
@click.option("--score", default=None, help="JMESPath to a hit's score ('' for rank order).")
@click.option("--text", default=None, help="JMESPath to a hit's chunk text ('' for none).")
@click.option("--preset", "preset_name", type=click.Choice(PRESETS), default=None)
@click.option("--text-field", default=None, help="With --preset: the field holding the text.")
@click.option("--concurrency", default=None, help=CONCURRENCY_HELP)
@click.option("--rpm", default=None, help="Requests per minute (0: no limit).")
@click.option("--timeout", default=None, help=TIMEOUT_HELP)
@cli_errors
def edit(
    testset: str,
    name: str,
    new_name: str | None,
    body_file: str | None,
    headers: tuple[str, ...],
    no_headers: bool,
    preset_name: str | None,
    rpm: str | None,
    **given: str | None,
) -> None:
    """Change endpoint NAME of TESTSET: only the options given change, checked as `add` checks
    them (on any error nothing changes). Runs already fetched keep their own snapshot."""
    from ndcg_labeler.services import ServiceError

    if headers and no_headers:
        raise ServiceError("give --header or --no-headers, not both")
    changes = {key: value for key, value in given.items() if value is not None}
    optional = {"name": new_name, "preset_name": preset_name, "requests_per_minute": rpm}
    changes |= {key: value for key, value in optional.items() if value is not None}
    if body_file:
        changes["body"] = _read_body(Path(body_file))
    if headers or no_headers:
        changes["headers"] = list(headers)
    if not changes:
        raise ServiceError("give at least one option to change (see --help)")
    test_set = testsets.require_by_name(testset)
    endpoint = endpoints.edit_endpoint(
        test_set, endpoints.require_endpoint(test_set, name), **changes
    )
    click.echo(f"Endpoint {endpoint.name} saved ({endpoint.method} {endpoint.url}).")


@endpoints_group.command("delete")
@click.argument("testset")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@cli_errors
def delete(testset: str, name: str, yes: bool) -> None:
    """Delete endpoint NAME of TESTSET (refused while it has a schedule or a job will ask it).
    Runs fetched from it stay, with their snapshot of it."""
    test_set = testsets.require_by_name(testset)
    endpoint = endpoints.require_endpoint(test_set, name)

    def ask() -> None:
        click.confirm(
            f"Delete endpoint '{endpoint.name}' of '{test_set.name}'?", abort=True, err=True
        )

    # Asked only once the delete would be accepted: a refused one is an error, not a question.
    endpoints.delete_endpoint(test_set, endpoint, confirm=None if yes else ask)
    click.echo(f"Endpoint {name} deleted; runs fetched from it keep their snapshot.")


@endpoints_group.command("list")
@click.argument("testset")
@click.option("--json", "as_json", is_flag=True)
@cli_errors
def list_(testset: str, as_json: bool) -> None:
    """List the endpoints of TESTSET (header names only: their values may be secret)."""
    found = endpoints.list_endpoints(testsets.require_by_name(testset))
    rows = [
        {
            **endpoints.snapshot(e),
            "concurrency": e.concurrency,
            "requests_per_minute": e.requests_per_minute,
            "timeout": e.timeout,
            "schedule": e.schedule,
            "series": e.schedule_series,
        }
        for e in found
    ]
    if as_json:
        click.echo(json.dumps(rows))
        return
    if not rows:
        click.echo(f"Test set '{testset}' has no endpoint.")
    for row in rows:
        scheduled = f"\t{row['schedule']} -> {row['series']}" if row["schedule"] else ""
        click.echo(f"{row['endpoint']}\t{row['method']} {row['url']}{scheduled}")


def _read_body(path: Path) -> str:
    """The body template's text; a ServiceError (not a traceback) when it is not UTF-8."""
    from ndcg_labeler.services import ServiceError

    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ServiceError(
            f"{path} is not UTF-8 text (byte {exc.start}): save the body template as UTF-8"
        ) from None


@endpoints_group.command("try")
@click.argument("testset")
@click.argument("name")
@click.argument("query")
@click.option("--k", type=int, default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@cli_errors
def try_(testset: str, name: str, query: str, k: int, as_json: bool) -> None:
    """Ask endpoint NAME for QUERY and print the mapped results (or the exact mapping error)."""
    endpoint = endpoints.require_endpoint(testsets.require_by_name(testset), name)
    hits = endpoints.try_query(endpoint, query, k)
    if as_json:
        click.echo(json.dumps([{"docid": h.docid, "score": h.score, "text": h.text} for h in hits]))
        return
    for rank, hit in enumerate(hits, start=1):
        score = "—" if hit.score is None else f"{hit.score:.4f}"
        click.echo(f"{rank}\t{hit.docid}\t{score}\t{(hit.text or '')[:80]}")


@endpoints_group.command("fetch")
@click.argument("testset")
@click.argument("name")
@click.option("--run", "run_name", required=True, help="Name of the run to store.")
@click.option("--k", type=int, default=endpoints.DEFAULT_K, show_default=True)
@click.option("--accept-partial", is_flag=True, help="Store the run without failed queries.")
@click.option("--json", "as_json", is_flag=True)
@cli_errors
def fetch(
    testset: str, name: str, run_name: str, k: int, accept_partial: bool, as_json: bool
) -> None:
    """Ask endpoint NAME for every query of TESTSET and store the answers as run RUN."""
    test_set = testsets.require_by_name(testset)
    endpoint = endpoints.require_endpoint(test_set, name)
    with terminal_progress() as progress:
        try:
            _run, report = endpoints.fetch_run(
                test_set, endpoint, run_name, k=k, accept_partial=accept_partial, progress=progress
            )
        except endpoints.FetchFailed as exc:
            if as_json:
                click.echo(json.dumps(exc.report.to_json()))
            for failure in exc.report.failed:
                click.echo(f"failed {failure['qid']}: {failure['error']}", err=True)
            raise
    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        click.echo(
            f"Run {report.run}: {report.fetched} of {report.queries} "
            f"{noun(report.queries, 'query', 'queries')} fetched, {len(report.failed)} failed, "
            f"{report.new_chunks} new {noun(report.new_chunks, 'chunk')}, {report.seconds:.1f} s."
        )
    for failure in report.failed:
        click.echo(f"left out {failure['qid']}: {failure['error']}", err=True)
    sys.stdout.flush()


@endpoints_group.command("schedule")
@click.argument("testset")
@click.argument("name")
@click.option("--daily", default=None, help="Every day at HH:MM (UTC).")
@click.option("--cron", default=None, help="A five-field cron expression (UTC).")
@click.option("--off", is_flag=True, help="Remove the schedule.")
@click.option("--series", "series_name", default="", help="The series the runs join.")
@click.option("--k", type=int, default=endpoints.DEFAULT_K, show_default=True)
@cli_errors
def schedule(
    testset: str,
    name: str,
    daily: str | None,
    cron: str | None,
    off: bool,
    series_name: str,
    k: int,
) -> None:
    """Fetch, score and gate a run of endpoint NAME on a schedule (the job worker runs it)."""
    from ndcg_labeler.services import ServiceError, series

    if sum(bool(x) for x in (daily, cron, off)) != 1:
        raise ServiceError("give exactly one of --daily HH:MM, --cron EXPR or --off")
    test_set = testsets.require_by_name(testset)
    text = "" if off else (f"daily {daily}" if daily else str(cron))
    endpoint = series.set_schedule(test_set, name, text, series_name, k)
    if not endpoint.schedule:
        click.echo(f"Endpoint '{endpoint.name}' has no schedule now.")
        return
    upcoming = series.next_run(endpoint)
    click.echo(
        f"Endpoint '{endpoint.name}' runs {endpoint.schedule} (UTC) into series "
        f"'{endpoint.schedule_series}'; next at {upcoming:%Y-%m-%d %H:%M} UTC."
    )
