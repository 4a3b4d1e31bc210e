"""`flask run compare TESTSET RUN_A RUN_B` and `flask pool TESTSET --depth N [--run RUN ...]`."""

from __future__ import annotations

import json

import click
from flask.cli import with_appcontext

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.cli._progress import terminal_progress
from ndcg_labeler.cli.runs import run_group, scoring_options
from ndcg_labeler.services import ServiceError, comparison, live, pooling, runs, testsets

# How many per-query rows the readable table shows (the JSON has them all).
TABLE_QUERIES = 20


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _table(result: comparison.Comparison, name_a: str, name_b: str) -> list[str]:
    """The comparison as a readable table."""
    o, pair = result.options, result.first_pair
    lines = [
        f"NDCG@{o.k}, gain {o.gain}, ideal {o.ideal}, aggregation {o.policy}"
        + (", judged only" if o.judged_only else ""),
        f"Compared on {result.compared} of {result.total} queries ({result.left_out} left out:"
        " NDCG undefined in a run).",
        "",
        f"{'run':<30}  {'mean':>8}  95% bootstrap interval",
    ]
    for label, m in zip(("A", "B"), result.means, strict=False):
        interval = "—" if m.low is None else f"{m.low:.4f} – {m.high:.4f}"
        lines.append(f"{label} {m.run.name:<28}  {_p(m.mean):>8}  {interval}")
    lines += [
        "",
        f"B beats A on {pair.wins} queries, ties on {pair.ties}, loses on {pair.losses}.",
        f"Paired t-test p = {_p(pair.t_test_p)}; randomisation test p = "
        f"{_p(pair.randomization_p)} (two-sided).",
        robust_statement(pair.robustness, o.top_grade),
        "",
        f"Largest differences (of {len(result.deltas)}):",
        f"{'qid':<20}  {'A':>8}  {'B':>8}  {'B − A':>8}",
    ]
    for d in result.deltas[:TABLE_QUERIES]:
        lines.append(f"{d.qid:<20}  {d.a:>8.4f}  {d.b:>8.4f}  {d.delta:>+8.4f}")
    return lines


def robust_statement(found: comparison.Robustness | None, top_grade: int) -> str:
    """Whether the winner stays if every unjudged top-k chunk of either run had the top grade."""
    if found is None:
        return ""
    names = {"A": "A wins", "B": "B wins", "tie": "a tie"}
    rests = f"{found.unjudged_pairs} unjudged (query, chunk) pairs"
    if found.robust:
        return f"robust: {names[found.winner]} also if the {rests} had grade {top_grade}."
    return (
        f"NOT robust: {names[found.winner]} today, {names[found.winner_if_top]} if the {rests}"
        f" had grade {top_grade} (flips_if_unjudged_top)."
    )


@run_group.command("compare")
@click.argument("testset")
@click.argument("run_a")
@click.argument("run_b")
@scoring_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@cli_errors
def compare(
    testset: str, run_a: str, run_b: str, options: live.ScoreOptions, as_json: bool
) -> None:
    """Compare RUN_B with RUN_A: means with 95% bootstrap intervals, paired tests, deltas.

    And whether the winner rests on unjudged chunks: "robust" (JSON robust,
    flips_if_unjudged_top, unjudged_pairs) says whether the sign of mean B − mean A stays the
    same when every unjudged chunk in the top k of either run gets the scale's top grade, as if
    judged so (both runs' ideals grow by them), and on how many distinct unjudged (query, chunk)
    pairs that rests. See the user guide's scoring conventions.
    """
    test_set = testsets.require_by_name(testset)
    a = runs.require_run(test_set, run_a)
    b = runs.require_run(test_set, run_b)
    result = comparison.compare_runs([a, b], options)
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False))
        return
    click.echo("\n".join(_table(result, a.name, b.name)))


@click.command("pool")
@click.argument("testset")
@click.option("--depth", required=True, help="Pool the top N of each query.")
@click.option("--run", "run_names", multiple=True, help="A run to pool from (repeat); default all.")
@click.option(
    "--order-by-judge",
    "judge",
    default=None,
    help="Queue first the pairs whose grade by this machine judge would move NDCG most.",
)
@with_appcontext
@cli_errors
def pool(testset: str, depth: str, run_names: tuple[str, ...], judge: str | None) -> None:
    """Add the unjudged chunks of the runs' top DEPTH to TESTSET's labeling queue."""
    try:
        cut = int(depth)
    except ValueError:
        raise ServiceError(f"--depth must be a whole number, not '{depth}'") from None
    test_set = testsets.require_by_name(testset)
    if run_names:
        pooled = [runs.require_run(test_set, name) for name in run_names]
    else:
        pooled = runs.list_runs(test_set)
        if not pooled:
            raise ServiceError(f"test set '{test_set.name}' has no runs to pool from")
    with terminal_progress() as progress:  # a bar on stderr when it is a terminal
        added, plan = pooling.add_pool(test_set, pooled, cut, judge, progress=progress)
    click.echo(
        f"Added {added} pairs to the labeling queue of '{test_set.name}' from the top {plan.depth}"
        f" of {', '.join(run.name for run in plan.runs)} ({plan.already_queued} already queued,"
        f" {plan.not_in_corpus} not in the corpus)."
    )
    for c in plan.coverage:
        now = "—" if c.now is None else f"{100 * c.now:.0f}%"
        after = "—" if c.after is None else f"{100 * c.after:.0f}%"
        click.echo(f"  {c.run.name}: judged@{plan.depth} {now} now, {after} once graded")
