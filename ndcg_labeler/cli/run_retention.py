"""`flask run archive|tag ...`: retention and the tags and pin that lists filter and show by."""

from __future__ import annotations

import click

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.cli.runs import run_group
from ndcg_labeler.services import noun, runs, testsets


@run_group.command("archive")
@click.argument("testset")
@click.argument("run")
@click.option("--keep", type=int, required=True, help="Entries to keep per query (at least 10).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@cli_errors
def archive(testset: str, run: str, keep: int, yes: bool) -> None:
    """Archive RUN of TESTSET: keep its stored scores and top KEEP entries per query, drop
    the rest (audited; asks first unless --yes). It still lists, compares and gates at cutoffs
    up to KEEP; deeper cutoffs are refused with an error saying so."""
    test_set = testsets.require_by_name(testset)
    found = runs.require_run(test_set, run)

    def ask() -> None:
        click.confirm(
            f"Archive run {found.name}: keep its top {keep} entries per query and delete the "
            f"rest of its {found.num_entries} {noun(found.num_entries, 'entry', 'entries')} "
            "for good?",
            abort=True,
            err=True,
        )

    # Asked only once the depth is acceptable: a refused one is an error, not a question.
    dropped = runs.archive_run(found, keep, confirm=None if yes else ask)
    click.echo(
        f"Archived run '{found.name}': kept {found.num_entries} "
        f"{noun(found.num_entries, 'entry', 'entries')} (top {keep} per query), "
        f"dropped {dropped}."
    )


@run_group.command("tag")
@click.argument("testset")
@click.argument("run")
@click.option("--add", "add", multiple=True, help="A tag to add (repeat for more).")
@click.option("--remove", "remove", multiple=True, help="A tag to remove (repeat for more).")
@click.option("--pin/--unpin", default=None, help="Show the run on the overview whatever its rank.")
@cli_errors
def tag(
    testset: str, run: str, add: tuple[str, ...], remove: tuple[str, ...], pin: bool | None
) -> None:
    """Add or remove tags of RUN of TESTSET, and pin or unpin it (audited)."""
    test_set = testsets.require_by_name(testset)
    found = runs.mark_run(runs.require_run(test_set, run), add=add, remove=remove, pinned=pin)
    tags = ", ".join(found.tag_names) or "no tags"
    click.echo(f"Run '{found.name}': {tags}{'; pinned' if found.pinned else ''}.")
