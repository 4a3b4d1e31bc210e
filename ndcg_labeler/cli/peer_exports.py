"""`flask run export ...`: a stored run in a peer's shape (a Quepid case snapshot CSV)."""

from __future__ import annotations

import click

from ndcg_labeler.cli._common import cli_errors, write_out
from ndcg_labeler.cli.runs import run_group
from ndcg_labeler.services import ServiceError, interop, runs, testsets


@run_group.command("export")
@click.argument("testset")
@click.argument("run")
@click.option(
    "--format", "fmt", default="quepid-snapshot", show_default=True, help="quepid-snapshot."
)
@click.option("-o", "--output", metavar="FILE", help="Write here instead of to stdout.")
@cli_errors
def export(testset: str, run: str, fmt: str, output: str | None) -> None:
    """Write run RUN of TESTSET as a Quepid case snapshot CSV (positions in rank order)."""
    if fmt != "quepid-snapshot":
        raise ServiceError(f"--format must be quepid-snapshot, not '{fmt}'")
    found = runs.require_run(testsets.require_by_name(testset), run)
    body, _, _ = interop.export_run_snapshot(found)
    write_out(body, output)
