"""`flask agreement NAME [--json]` and `flask judgments export NAME --format csv|jsonl`."""

from __future__ import annotations

import json

import click
from flask.cli import AppGroup, with_appcontext

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.services import team, testsets


def _fmt(value: float | None, percent: bool = False) -> str:
    """A figure for the readable summary; undefined ones say so."""
    if value is None:
        return "not enough overlap"
    return f"{100 * value:.1f}%" if percent else f"{value:.3f}"


@click.command("agreement")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@click.option(
    "--include-imports",
    is_flag=True,
    help="Count import sources (imported qrels) as raters too; by default only people count.",
)
@with_appcontext
@cli_errors
def agreement(name: str, as_json: bool, include_imports: bool) -> None:
    """Inter-annotator agreement of test set NAME (graded judgments only)."""
    test_set = testsets.require_by_name(name)
    found = team.agreement_of(test_set, include_imports=include_imports)
    if as_json:
        click.echo(json.dumps(found.as_dict(), ensure_ascii=False))
        return
    click.echo(f"Agreement in {test_set.name} (grades 0-{test_set.scale_max})")
    click.echo(f"  pairs graded by 2 or more:    {found.pairs_with_2plus}")
    click.echo(f"  percent agreement:            {_fmt(found.percent_agreement, percent=True)}")
    click.echo(f"  Fleiss' kappa:                {_fmt(found.fleiss_kappa)}")
    click.echo(f"  Krippendorff's alpha ordinal: {_fmt(found.krippendorff_alpha_ordinal)}")
    if not found.cohen:
        click.echo("Cohen's kappa: no two annotators graded the same pair.")
        return
    click.echo("Cohen's kappa per two annotators (quadratic, linear weights):")
    for pair in found.cohen:
        click.echo(
            f"  {pair.a} / {pair.b}: n={pair.n}, quadratic {_fmt(pair.kappa_quadratic)}, "
            f"linear {_fmt(pair.kappa_linear)}"
        )


# AppGroup: subcommands run inside the app context, also under FlaskCliRunner.
@click.group("judgments", cls=AppGroup)
def judgments_group() -> None:
    """Every annotator's judgments."""


@judgments_group.command("export")
@click.argument("name")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(team.EXPORT_FORMATS),
    default="csv",
    show_default=True,
    help="csv (header line first) or jsonl (one JSON object per line).",
)
@cli_errors
def export(name: str, fmt: str) -> None:
    """Print every judgment of test set NAME with notes and times (all annotators)."""
    test_set = testsets.require_by_name(name)
    for chunk in team.judgment_chunks(test_set, fmt):
        click.echo(chunk, nl=False)
