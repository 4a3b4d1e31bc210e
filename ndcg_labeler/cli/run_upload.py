"""`flask run upload ...`: a run file (or a Quepid snapshot) into a test set, in this process.

Apart from the other `flask run` subcommands (ndcg_labeler.cli.runs attaches it when asked
for): `flask run list` loads none of it. The import and interop services, which only a Quepid
snapshot needs, are imported there: a refused upload's time includes its start-up (issue 30).
"""

from __future__ import annotations

import os

import click

from ndcg_labeler.cli._common import cli_errors, run_size
from ndcg_labeler.cli._progress import terminal_progress
from ndcg_labeler.cli.runs import run_group
from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services import ServiceError, noun, runs, testsets, whole_number


@run_group.command("upload")
@click.argument("testset")
@click.argument("file")
@click.option(
    "--name", default="", help="Name of the run within the test set (default: the file's name)."
)
@click.option("--depth", default=None, help="Keep the top N of each query (default 1000).")
@click.option("--notes", default="", help="Free text kept with the run.")
@click.option(
    "--format",
    "fmt",
    default=None,
    metavar="quepid-snapshot",
    help="FILE is a Quepid case snapshot CSV (queries named by their text).",
)
@click.option("--series", default="", help="The series the run belongs to (e.g. nightly).")
@cli_errors
def upload(
    testset: str,
    file: str,
    name: str,
    depth: str | None,
    notes: str,
    fmt: str | None,
    series: str,
) -> None:
    """Upload FILE (TREC, CSV/TSV, JSONL, MS MARCO; gzip ok) as run NAME of TESTSET.

    Runs in this process (no job worker); a progress bar goes to stderr when it is a terminal.
    """
    test_set = testsets.require_by_name(testset)
    cut = None if depth is None else whole_number(depth, "--depth", 1, runs.MAX_DEPTH)
    if fmt not in (None, "quepid-snapshot"):
        raise ServiceError(f"--format must be quepid-snapshot (or left out), not '{fmt}'")
    if fmt == "quepid-snapshot":
        from ndcg_labeler.services import imports, interop

        with open(file, "rb") as stream:
            run = interop.upload_quepid_snapshot(
                test_set,
                imports.ImportFile(stream, os.path.basename(file)),
                runs.clean_name(name, file),
                None,
                depth=cut,
                notes=notes,
                series=series,
            )
    else:
        run = _upload_file(test_set, file, name, cut, notes, series)
    _report_upload(run, test_set.name)


def _upload_file(
    test_set: TestSet, file: str, name: str, cut: int | None, notes: str, series: str
) -> Run:
    """Upload a run file of our own formats, with a progress bar."""
    with open(file, "rb") as stream, terminal_progress() as progress:
        return runs.upload_run(
            test_set,
            stream,
            os.path.basename(file),
            runs.clean_name(name, file),
            None,
            depth=cut,
            notes=notes,
            progress=progress,
            series=series,
        )


def _report_upload(run: Run, test_set_name: str) -> None:
    """Print what an upload stored and what it left out."""
    report = run.report or {}
    click.echo(
        f"Uploaded run '{run.name}' to test set '{test_set_name}': {run_size(run)} "
        f"(format {run.format}, depth {run.depth})"
        + (f", series '{run.series}'." if run.series else ".")
    )
    unknown = report.get("unknown_queries", {})
    if unknown.get("count"):
        examples = ", ".join(unknown["examples"])
        n = unknown["count"]
        click.echo(
            f"Left out {n} {noun(n, 'query', 'queries')} the test set does not have "
            f"(e.g. {examples})."
        )
    missing = report.get("missing_queries", {})
    if missing.get("count"):
        examples = ", ".join(missing["examples"])
        n = missing["count"]
        they = "it scores" if n == 1 else "they score"
        click.echo(
            f"The run has no ranking for {n} test-set {noun(n, 'query', 'queries')}; {they} 0 "
            f"(e.g. {examples})."
        )
    for fetch in report.get("corpus_fetch", []):
        click.echo(fetch["message"] + ".")
    lacking = report.get("docids_not_in_corpus", {})
    if lacking.get("count"):
        examples = ", ".join(lacking["examples"])
        n, entries = lacking["count"], lacking["entries"]
        are, they = ("is", "it stays") if n == 1 else ("are", "they stay")
        click.echo(
            f"{n} {noun(n, 'docid')} ({entries} ranked {noun(entries, 'entry', 'entries')}) "
            f"{are} not in the test set's corpus; {they} in the run, unjudged (e.g. {examples})."
        )
