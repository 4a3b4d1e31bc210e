"""`flask agreement NAME [--json|--csv] [--per-query]` and `flask judgments export NAME --format
csv|jsonl`."""

from __future__ import annotations

import json
from typing import Any

import click
from flask.cli import AppGroup, with_appcontext

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.services import team, testsets


def _fmt(value: float | None, percent: bool = False) -> str:
    """A figure for the readable summary; undefined ones say so."""
    if value is None:
        return "not enough overlap"
    # "z": a figure that rounds to zero from below reads 0.000, not -0.000.
    return f"{100 * value:z.1f}%" if percent else f"{value:z.3f}"


def _cell(value: float | None, percent: bool = False) -> str:
    """A figure in the per-query table: n/a where undefined (too short for the sentence)."""
    return "n/a" if value is None else _fmt(value, percent)


def _per_query_table(queries: list[dict[str, Any]]) -> None:
    """The agreement page's per-query table (rows as in --json), as aligned plain text."""
    click.echo("Agreement per query (queries with a pair graded by 2 or more):")
    if not queries:
        click.echo("  none: no pair was graded twice.")
        return
    rows = [("qid", "raters", "pairs", "percent", "Fleiss", "alpha")]
    rows += [
        (
            q["qid"],
            str(q["raters"]),
            str(q["pairs_with_2plus"]),
            _cell(q["percent"], percent=True),
            _cell(q["fleiss"]),
            _cell(q["alpha"]),
        )
        for q in queries
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        click.echo("  " + "  ".join(cells).rstrip())
    click.echo("  (n/a: undefined, e.g. one grade used throughout the query)")


@click.command("agreement")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@click.option(
    "--csv",
    "as_csv",
    is_flag=True,
    help="Print a table as CSV with a header row: each two annotators, or with --per-query "
    "each query (the agreement page's downloads).",
)
@click.option(
    "--per-query",
    is_flag=True,
    help="Add the agreement page's per-query table (in --json: a `queries` key beside the others).",
)
@click.option(
    "--sort",
    type=click.Choice(team.QUERY_SORTS),
    default="qid",
    show_default=True,
    help="Order of the per-query table: qid, lowest alpha or percent first, most pairs first.",
)
@click.option(
    "--include-imports",
    is_flag=True,
    help="Count import sources (imported qrels) as raters too; by default only people count.",
)
@with_appcontext
@cli_errors
def agreement(
    name: str, as_json: bool, as_csv: bool, per_query: bool, sort: str, include_imports: bool
) -> None:
    """Inter-annotator agreement of test set NAME (graded judgments only)."""
    if as_json and as_csv:
        raise click.UsageError("--csv and --json print different shapes: choose one.")
    test_set = testsets.require_by_name(name)
    if as_csv or per_query:
        report = team.agreement_report(test_set, include_imports=include_imports)
        found = report.summary
    else:
        report, found = None, team.agreement_of(test_set, include_imports=include_imports)
    if as_csv:
        assert report is not None
        click.echo(report.table_csv("queries" if per_query else "pairs", sort), nl=False)
        return
    queries = [row.record() for row in team.sort_queries(report.queries, sort)] if report else []
    if as_json:
        body = found.as_dict()
        if per_query:
            body["queries"] = queries
        click.echo(json.dumps(body, ensure_ascii=False))
        return
    click.echo(f"Agreement in {test_set.name} (grades 0-{test_set.scale_max})")
    click.echo(f"  pairs graded by 2 or more:    {found.pairs_with_2plus}")
    click.echo(f"  percent agreement:            {_fmt(found.percent_agreement, percent=True)}")
    click.echo(f"  Fleiss' kappa:                {_fmt(found.fleiss_kappa)}")
    click.echo(f"  Krippendorff's alpha ordinal: {_fmt(found.krippendorff_alpha_ordinal)}")
    if not found.cohen:
        click.echo("Cohen's kappa: no two annotators graded the same pair.")
    else:
        click.echo("Cohen's kappa per two annotators (quadratic, linear weights):")
        for pair in found.cohen:
            click.echo(
                f"  {pair.a} / {pair.b}: n={pair.n}, quadratic {_fmt(pair.kappa_quadratic)}, "
                f"linear {_fmt(pair.kappa_linear)}"
            )
    if per_query:
        _per_query_table(queries)


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
