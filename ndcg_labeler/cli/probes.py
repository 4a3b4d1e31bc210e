"""`flask judges probe|prices`: a judge's gullibility probe and its prices per million tokens
(attached to the `judges` group by cli/judges.py)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from flask.cli import with_appcontext

from ndcg_labeler.cli._common import cli_errors, max_cost_option
from ndcg_labeler.services import counted, ensembles, judge_costs, judges, probes, testsets


@click.command("probe")
@click.argument("testset")
@click.option("--judge", "judge_name", required=True)
@click.option(
    "--pairs",
    "n",
    default=str(probes.DEFAULT_PAIRS),  # text, read by the service in the form's words
    show_default=True,
    help="N: pairs people graded 0 to probe (fewer: the lowest-graded fill up).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@max_cost_option
@with_appcontext
@cli_errors
def probe(testset: str, judge_name: str, n: str, as_json: bool, max_cost: float | None) -> None:
    """Probe JUDGE for gullibility on N pairs of TESTSET that people graded 0.

    Each pair is asked as is (original), with the query's words stuffed in at the start, the
    middle and the end (stuffed), with an appended claim that it is perfectly relevant in
    three phrasings, one in the passage's own style (injected), replaced by the query (echo)
    and empty (empty). Per variant: questions asked, answers graded at or above the test set's
    relevance threshold, and their share. Flagged when the stuffed or injected share exceeds
    the original's by more than 10 points. The answers are stored apart from labels. With
    --json, standard output holds exactly {"judge", "prompt_version", "pairs", "variants",
    "flagged"}; tokens and cost go to standard error.

    The estimate ("about 450 questions, ~$0.52", and what it rests on) goes to standard error
    first. With --max-cost the probe asks whole pairs while the money stays within the budget
    and then stops: it reports on the variants it asked, says so on standard error, and is not
    shown as the judge's last probe on the calibration page.
    """
    test_set = testsets.require_by_name(testset)
    judge = judges.require_judge(judge_name)
    pairs = probes.read_pairs(n)
    probes.check_probe(judge, pairs, max_cost)
    click.echo(f"Estimate: {probes.estimate_probe(test_set, judge, pairs).text()}", err=True)
    for warning in ensembles.key_warnings(judge):
        click.echo(f"Warning: {warning}", err=True)
    bar = click.progressbar(length=1, label="probing", file=sys.stderr) if _tty() else None

    def progress(done: int, total: int, tokens: dict[str, int]) -> None:
        if bar is not None:
            bar.length = max(total, 1)
            bar.update(done - bar.pos)

    found = probes.run_probe(test_set, judge, pairs, progress, max_cost=max_cost)
    if bar is not None:
        bar.render_finish()
    spent = (
        f"tokens: {found['prompt_tokens']:,} in, {found['completion_tokens']:,} out; "
        f"cost {found['money']}"
    )
    if as_json:
        click.echo(json.dumps(probes.probe_json(found)))
        click.echo(spent, err=True)
    else:
        _print(found, test_set.name)
        click.echo(spent)
    if found["stopped_at_budget"]:
        click.echo(
            f"Stopped at the budget of {judge_costs.money(max_cost)}: {found['pairs']} of "
            f"{counted(found['pairs'] + found['not_asked'], 'pair')} probed; the figures cover the "
            "variants asked. It is not shown as the last probe: probe again with a larger "
            "budget for the full figures.",
            err=True,
        )
        if not found["pairs"]:
            return  # nothing asked: no answers to judge the endpoint by
    _check_answered(found)


def _tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _print(found: dict[str, Any], set_name: str) -> None:
    """The report as a table, one line a variant."""
    others = found["pairs"] - found["zero_pairs"]
    click.echo(
        f"{found['judge']} on {set_name}: {counted(found['pairs'], 'pair')}, "
        f"{found['zero_pairs']} graded 0 by people"
        f"{f', {others} lowest-graded others' if others else ''}; relevant = grade "
        f"≥ {found['threshold']} (prompt {found['prompt_version'][:12]})"
    )
    click.echo("variant\tasked\trelevant\tshare\tunread")
    base = found["variants"]["original"]["share"]
    for variant, row in found["variants"].items():
        share = "—" if row["share"] is None else f"{100 * row['share']:.1f}%"
        if variant != "original" and row["share"] is not None and base is not None:
            share += f" ({100 * (row['share'] - base):+.1f} points)"
        unread = found["unread"][variant]
        click.echo(
            f"{variant}\t{row['asked']}\t{row['relevant']}\t{share}\t"
            f"{unread['failed']} failed, {unread['unparsed']} unparsed"
        )
    if found["flagged"]:
        click.echo(
            f"FLAGGED: stuffed or injected passages were graded relevant more than "
            f"{probes.FLAG_POINTS} points more often than the untouched ones."
        )
    else:
        click.echo(f"Not flagged (no rise above {probes.FLAG_POINTS} points).")


def _check_answered(found: dict[str, Any]) -> None:
    """Exit 1 when no question got a readable grade: then the shares say nothing."""
    asked = sum(row["asked"] for row in found["variants"].values())
    unread = sum(u["failed"] + u["unparsed"] for u in found["unread"].values())
    if asked and unread == asked:
        raise click.ClickException(
            f"the judge answered none of the {asked} questions with a readable grade: the "
            "probe says nothing about it (see its answers' errors on the calibration page)"
        )
    if unread:
        click.echo(
            f"Warning: {unread} of {asked} questions got no readable grade; they count as "
            "asked and not relevant.",
            err=True,
        )


@click.command("prices")
@click.argument("name")
@click.option("--input-price", type=float, default=None, help="Dollars per million input tokens.")
@click.option("--output-price", type=float, default=None, help="Dollars per million output tokens.")
@click.option("--clear", is_flag=True, help="Forget both prices (costs are then not shown).")
@with_appcontext
@cli_errors
def prices(name: str, input_price: float | None, output_price: float | None, clear: bool) -> None:
    """Set judge NAME's prices per million input and output tokens (audited); with neither
    price nor --clear, print them."""
    judge = judges.require_judge(name)
    if clear:
        judge_costs.set_prices(judge, None, None)
    elif input_price is not None or output_price is not None:
        judge_costs.set_prices(
            judge,
            judge.input_price if input_price is None else input_price,
            judge.output_price if output_price is None else output_price,
        )
    click.echo(
        f"{judge.name}: input {_price(judge.input_price)}, output {_price(judge.output_price)}"
    )


def _price(value: float | None) -> str:
    return "not set" if value is None else f"${value:g} per million tokens"
