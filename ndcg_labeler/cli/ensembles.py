"""`flask judges ensemble|few-shot|conflicts|resolve`: ensembles of judges, few-shot prompts
from the test set's own labels, and the "machine vs people" queue (added to `flask judges`)."""

from __future__ import annotations

import json

import click
from flask.cli import with_appcontext

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.services import corrections, counted, ensembles, judges, testsets


@click.command("ensemble")
@click.argument("name")
@click.option(
    "--member", "members", multiple=True, required=True, help="A member judge (repeat: 2 or more)."
)
@click.option(
    "--combine",
    type=click.Choice(list(ensembles.COMBINE)),
    default="median",
    show_default=True,
    help="median: the middle grade (of an even count, the lower); majority: the most given "
    "grade (a tie: the lower).",
)
@with_appcontext
@cli_errors
def ensemble(name: str, members: tuple[str, ...], combine: str) -> None:
    """Define NAME as an ensemble of the --member judges (run it as any judge)."""
    judge = ensembles.add_ensemble(name, members, combine)
    names = ", ".join(m.name for m in ensembles.members_of(judge))
    click.echo(f"Ensemble {judge.name} added: {names}, combined by {combine}.")


@click.command("few-shot")
@click.argument("name")
@click.argument("k")  # text, read by the service in the form's words
@with_appcontext
@cli_errors
def few_shot(name: str, k: str) -> None:
    """Put up to K human-graded examples of the test set in judge NAME's prompts (0: none).

    Examples: pairs with a final human grade (adjudicated, or every person's grade the same),
    balanced over the grades, never of the judged pair's query nor of an audit sample's query,
    each with a person's note when there is one. A new K is a new prompt version."""
    judge = judges.require_judge(name)
    changed = ensembles.set_few_shot(judge, k)
    shots = judge.few_shot
    said = counted(shots, "few-shot example")
    click.echo(f"Judge {judge.name}: {said}{'' if changed else ' (already)'}.")


@click.command("conflicts")
@click.argument("testset")
@click.option("--resolved", is_flag=True, help="List the resolved ones instead of the open ones.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of conflicts.")
@with_appcontext
@cli_errors
def conflicts(testset: str, resolved: bool, as_json: bool) -> None:
    """The "machine vs people" queue of TESTSET: people's grades two or more steps from a
    machine judge's, the largest disagreement first."""
    rows = corrections.list_conflicts(testsets.require_by_name(testset), resolved=resolved)
    if as_json:
        click.echo(json.dumps([row.to_json() for row in rows], ensure_ascii=False))
        return
    for row in rows:
        cells = [str(row.id), row.qid, row.docid, f"{row.judge} {row.machine_grade}"]
        cells.append(f"{row.person} {row.human_grade}")
        click.echo("\t".join([*cells, row.resolution] if row.resolution else cells))
    click.echo(f"{len(rows)} {'resolved' if resolved else 'open'}")


@click.command("resolve")
@click.argument("testset")
@click.argument("conflict_id", type=int)
@click.option(
    "--as",
    "resolution",
    type=click.Choice(list(corrections.RESOLUTIONS)),
    required=True,
    help="Who was right: people or machine.",
)
@with_appcontext
@cli_errors
def resolve(testset: str, conflict_id: int, resolution: str) -> None:
    """Close conflict CONFLICT_ID of TESTSET's "machine vs people" queue (audited)."""
    corrections.resolve_conflict(testsets.require_by_name(testset), conflict_id, resolution)
    click.echo(f"Conflict {conflict_id} resolved: {corrections.RESOLUTIONS[resolution]}.")


COMMANDS = (ensemble, few_shot, conflicts, resolve)
