"""`flask judge NAME QID DOCID GRADE --user USER` and `flask qrels export NAME`."""

from __future__ import annotations

import click
from flask.cli import AppGroup, with_appcontext

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.services import labeling, live, testsets


# ignore_unknown_options: a negative GRADE such as -1 reaches our own one-line refusal instead
# of being taken for an option.
@click.command("judge", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("qid")
@click.argument("docid")
@click.argument("grade")
@click.option("--user", "username", required=True, help="Whose judgment this is.")
@with_appcontext
@cli_errors
def judge(name: str, qid: str, docid: str, grade: str, username: str) -> None:
    """Set USER's grade of one query-chunk pair of test set NAME (history is kept)."""
    result, judgment = labeling.judge_by_names(name, qid, docid, grade, username)
    what = "set" if result.changed else "unchanged"
    click.echo(f"{qid} {docid}: grade {judgment.grade} by {username} ({what})")


# AppGroup: subcommands run inside the app context, also under FlaskCliRunner.
@click.group("qrels", cls=AppGroup)
def qrels_group() -> None:
    """Relevance judgments in TREC qrels format."""


@qrels_group.command("export")
@click.argument("name")
@click.option(
    "--policy",
    default=None,
    help="Aggregation policy (median, mean, max, min, majority); default: the test set's.",
)
@cli_errors
def export(name: str, policy: str | None) -> None:
    """Print `qid 0 docid grade` for every graded pair, as scoring uses it, sorted by qid, docid."""
    test_set = testsets.require_by_name(name)
    click.echo(live.qrels_text(test_set, policy), nl=False)
