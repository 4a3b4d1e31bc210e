"""`flask judges add|edit|run|ask-again|agreement|audit|list|archive|restore|delete|probe|prices`:
machine judges from the command line (probe and prices live in cli/probes.py).

`judges run` does the work in this process (a progress bar on stderr when it is a terminal)
and prints its JSON when done.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from flask.cli import AppGroup

from ndcg_labeler.cli import ensembles as ensemble_commands
from ndcg_labeler.cli._common import cli_errors, max_cost_option
from ndcg_labeler.cli.probes import prices, probe
from ndcg_labeler.services import (
    audit_samples,
    counted,
    ensembles,
    judge_costs,
    judges,
    live,
    ppi,
    read_whole,
    testsets,
)


@click.group("judges", cls=AppGroup)
def judges_group() -> None:
    """Machine judges (LLMs behind an OpenAI-compatible endpoint)."""


for _command in ensemble_commands.COMMANDS:  # ensembles, few-shot, the conflicts queue
    judges_group.add_command(_command)


@judges_group.command("add")
@click.argument("name")
@click.option("--base-url", required=True, help="e.g. http://127.0.0.1:8000/v1 (vLLM, Ollama).")
@click.option("--model", required=True, help="The model name the endpoint serves.")
@click.option(
    "--api-key-env",
    default="",
    help="NAME of the environment variable with the key (allowed by NDCG_SECRET_ENV).",
)
@click.option("--prompt", "prompt_file", type=click.Path(dir_okay=False), default=None)
# Numbers are read as text by the service (judges.read_settings, judge_costs.check_price), so a
# value that is no number is refused in the same words as one out of range, here and in the form.
@click.option("--temperature", default="0", show_default=True, help="From 0 to 2.")
@click.option("--max-tokens", default=str(judges.DEFAULTS["max_tokens"]), show_default=True)
@click.option("--concurrency", default=str(judges.DEFAULTS["concurrency"]), show_default=True)
@click.option("--timeout", default="60", show_default=True, help="Seconds per request.")
@click.option("--rpm", default="0", help="Requests per minute (0: no limit).")
@click.option(
    "--few-shot",
    "few_shot",
    default="0",
    show_default=True,
    help="K: up to K human-graded examples of the test set in each prompt (see judges few-shot).",
)
@click.option("--input-price", default=None, help="Dollars per million input tokens.")
@click.option("--output-price", default=None, help="Dollars per million output tokens.")
@cli_errors
def add(
    name: str,
    base_url: str,
    model: str,
    api_key_env: str,
    prompt_file: str | None,
    temperature: str,
    max_tokens: str,
    concurrency: str,
    timeout: str,
    rpm: str,
    few_shot: str,
    input_price: str | None,
    output_price: str | None,
) -> None:
    """Define a judge NAME (the key stays in the environment; only its variable name is kept)."""
    template = Path(prompt_file).read_text(encoding="utf-8") if prompt_file else ""
    prices = (  # checked before the judge exists
        judge_costs.check_price(input_price, "input"),
        judge_costs.check_price(output_price, "output"),
    )
    try:
        judge = judges.add_judge(
            name,
            base_url,
            model,
            api_key_env=api_key_env,
            prompt_template=template,
            temperature=temperature,
            max_tokens=max_tokens,
            concurrency=concurrency,
            timeout=timeout,
            requests_per_minute=rpm,
            few_shot=few_shot,
        )
    except judges.TemplateRefused as exc:
        # The file's content is a bad parameter: click's usage error, exit status 2.
        raise click.BadParameter(str(exc), param_hint="--prompt") from None
    if prices != (None, None):
        judge_costs.set_prices(judge, *prices)
    click.echo(f"Judge {judge.name} added ({judge.model} at {judge.base_url}).")


@judges_group.command("edit")
@click.argument("name")
@click.option("--base-url", default=None, help="A new OpenAI-compatible base URL.")
# Text, read by the service as `judges add` reads them (judges.read_settings): the same words.
@click.option("--concurrency", default=None, help="Requests in flight at once.")
@click.option("--timeout", default=None, help="Seconds per request.")
@click.option("--rpm", default=None, help="Requests per minute (0: no limit).")
@click.option("--json", "as_json", is_flag=True, help='Print {"judge", "changed"}.')
@cli_errors
def edit(
    name: str,
    base_url: str | None,
    concurrency: str | None,
    timeout: str | None,
    rpm: str | None,
    as_json: bool,
) -> None:
    """Change judge NAME's base URL, concurrency, timeout or requests per minute (audited);
    the settings not given stay. Its stored answers and their history stay as they are."""
    judge = judges.require_judge(name)
    changed = judges.edit_judge(
        judge,
        base_url=base_url,
        concurrency=concurrency,
        timeout=timeout,
        requests_per_minute=rpm,
    )
    if as_json:
        click.echo(json.dumps({"judge": judge.name, "changed": changed}))
    elif not changed:
        click.echo(f"Judge {judge.name} unchanged.")
    else:
        said = "; ".join(f"{key} {old} -> {new}" for key, (old, new) in changed.items())
        click.echo(f"Judge {judge.name}: {said}.")


@judges_group.command("list")
@click.option("--archived", is_flag=True, help="List the archived judges too (marked so).")
def list_judges(archived: bool) -> None:
    """The judges in use, one per line."""
    for judge in judges.list_judges(archived=archived):
        mark = "\tarchived" if judge.archived_at is not None else ""
        click.echo(f"{judge.name}\t{judge.model}\t{judge.base_url}{mark}")


@judges_group.command("run")
@click.argument("testset")
@click.option("--judge", "judge_name", required=True)
@click.option("--pairs", default="unjudged", show_default=True, help="unjudged|all|human|sample:N")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@max_cost_option
@click.option("--estimate", is_flag=True, help="Print the estimate (pairs, cost) and stop.")
@cli_errors
def run(
    testset: str, judge_name: str, pairs: str, as_json: bool, max_cost: float | None, estimate: bool
) -> None:
    """Ask the judge about TESTSET's pairs (resumes: pairs already answered are skipped).

    The estimate ("about 12,400 pairs, ~$3.10", and what it rests on) goes to standard error
    first. With --max-cost the run stops between batches before the money spent would pass
    the budget; run it again (with a new budget) to continue with the pairs not yet asked.
    """
    test_set = testsets.require_by_name(testset)
    judge = judges.require_judge(judge_name)
    if not pairs.startswith("again:"):
        guess = judge_costs.estimate_run(test_set, judge, pairs)
        if estimate:
            click.echo(json.dumps(guess.to_json()) if as_json else guess.text())
            return
        if not as_json:  # JSON output stays one object (the JSON has the cost)
            click.echo(f"Estimate: {guess.text()}", err=True)
    warn_keys(judge)
    bar, progress = _progress_bar()
    found = judges.run_judge(test_set, judge, pairs, progress, max_cost=max_cost)
    _report(found, bar, as_json)


def warn_keys(judge: Any) -> None:
    """Say on standard error, before asking, each key variable of the judge not set here."""
    for warning in ensembles.key_warnings(judge):
        click.echo(f"Warning: {warning}", err=True)


def _progress_bar() -> tuple[Any, Callable[[int, int, dict[str, int]], None]]:
    """A progress bar on stderr when it is a terminal, and the callback run_judge calls."""
    bar = None
    if sys.stderr.isatty():
        bar = click.progressbar(length=1, label="judging", file=sys.stderr)

    def progress(done: int, total: int, tokens: dict[str, int]) -> None:
        if bar is not None:
            bar.length = max(total, 1)
            bar.update(done - bar.pos)

    return bar, progress


def _report(report: Any, bar: Any, as_json: bool) -> None:
    """Print a run's report: its JSON object, or one line."""
    if bar is not None:
        bar.render_finish()
    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        click.echo(
            f"{report.judge}: {report.requested} pairs, {report.labeled} labeled, "
            f"{report.unparsed} unparsed, {report.failed} failed, {report.skipped} answered "
            f"before, in {report.seconds:.1f} s (prompt {report.prompt_version[:12]})"
        )
        click.echo(
            f"Tokens: {report.prompt_tokens:,} in, {report.completion_tokens:,} out; "
            f"cost {judge_costs.money(report.cost)}"
        )
    if report.not_asked and not as_json:
        click.echo(
            f"Stopped at the budget of {judge_costs.money(report.max_cost)}: "
            f"{counted(report.not_asked, 'pair')} not asked yet; run again to continue with them.",
            err=True,
        )


@judges_group.command("agreement")
@click.argument("testset")
@click.option("--judge", "judge_name", required=True)
# Text, read as the pages read ?k= (live.parse_options): one sentence for "ten" and for 0.
@click.option("--k", "k_text", default="10", show_default=True, help="Cutoff k of NDCG@k.")
@click.option("--json", "as_json", is_flag=True)
@cli_errors
def agreement(testset: str, judge_name: str, k_text: str, as_json: bool) -> None:
    """The judge's calibration against the human consensus on TESTSET.

    Figures on too little evidence are withheld (null in --json, kept with the reason under
    "withheld"): κ and the mean difference below 10 compared pairs, a run's mean NDCG@k below
    5 defined queries or 50% mean judged@k, Kendall's τ below 5 runs whose two means are shown.
    The audit status comes last ("audit" in --json): k of N queries audited, and how many of
    the judge's pairs have only failed or unparsed answers (counted as unjudged).
    """
    k = live.parse_options({"k": k_text}).k
    test_set = testsets.require_by_name(testset)
    judge = judges.require_judge(judge_name)
    found = judges.judge_agreement(test_set, judge, k)
    # As the calibration page's caption: the machine means beside how much people audited and
    # how many pairs have no readable answer (scored as unjudged, so a flaky endpoint would
    # otherwise look like a harsh judge).
    status = ppi.audit_status(test_set, f"machine:{judge.name}")
    if status is not None:
        found["audit"] = status.to_json()
    if as_json:
        click.echo(json.dumps(found))
        return
    shown = {  # withheld or undefined: a dash, as on the page
        key: "—" if found[key] is None else found[key]
        for key in ("kappa_quadratic", "kappa_binary", "mean_difference", "kendall_tau")
    }
    click.echo(
        f"{found['judge']} on {found['pairs']} pairs: κ quadratic {shown['kappa_quadratic']}, "
        f"κ binary {shown['kappa_binary']}, mean difference {shown['mean_difference']}, "
        f"Kendall's τ of the runs {shown['kendall_tau']}"
    )
    if status is not None:
        click.echo(f"Machine means: {status.text} for judge {status.judge}")
        if status.failed_note:
            click.echo(status.failed_note)
    for key, why in found["withheld"].items():
        click.echo(f"{key} withheld: {why['reason']}")
    for row in found["runs"]:
        for key, why in row.get("withheld", {}).items():
            click.echo(f"{row['run']} {key} withheld: {why['reason']}")


@judges_group.command("audit")
@click.argument("testset")
@click.option("--judge", "judge_name", required=True)
@click.option(
    "--queries",
    "n",
    required=True,  # text, read by the service in the form's words
    help="N: the sample's size; a larger N than before extends the same sample.",
)
@click.option(
    "--seed",
    default=None,  # text, read as the audit form reads it: the same sentence for "seven"
    help="The draw's seed (first draw only; default: a random seed, stored and shown).",
)
@click.option(
    "--reseed",
    is_flag=True,
    help="Replace the stored sample by a new draw (with --seed, or a new random seed).",
)
@click.option("--json", "as_json", is_flag=True, help="Print {queries, seed, audited, ...}.")
@cli_errors
def audit(
    testset: str, judge_name: str, n: str, seed: str | None, reseed: bool, as_json: bool
) -> None:
    """Draw (or extend) JUDGE's audit sample: N of TESTSET's queries, uniformly at random.

    The draw permutes the qids, sorted in byte order, with numpy.random.default_rng(SEED)
    and takes the first N; the sample is stored in draw order, and its pool pairs come first
    in the labeling queue. A query is audited once every pool pair of it has a human grade
    (a person's judgment or an imported qrel; machine grades do not count). A sampled query
    without pool pairs is not audited. The output lists the sample in draw order, each
    query marked "audited", "no pool pairs yet" or "-", then "k of N audited".
    """
    test_set = testsets.require_by_name(testset)
    judge = judges.require_judge(judge_name)
    drawn_with = None
    if seed is not None:
        drawn_with = read_whole(seed, "the seed", 0, audit_samples.MAX_SEED)
    state = audit_samples.draw_audit(test_set, judge, n, seed=drawn_with, reseed=reseed)
    if as_json:
        click.echo(json.dumps(state.to_json()))
        return
    audited, empty = set(state.audited), set(state.no_pairs)
    click.echo(
        f"{judge.name} on {test_set.name}: {len(state.queries)} of {state.query_count} queries "
        f"sampled with seed {state.seed}"
    )
    for place, qid in enumerate(state.queries, start=1):
        mark = "audited" if qid in audited else "no pool pairs yet" if qid in empty else "-"
        click.echo(f"{place}\t{qid}\t{mark}")
    click.echo(f"{len(state.audited)} of {len(state.queries)} audited")


@judges_group.command("ask-again")
@click.argument("testset")
@click.option("--judge", "judge_name", required=True)
@click.option(
    "--pairs",
    type=click.Choice(list(judges.AGAIN_CHOICES)),
    default="failed,unparsed",
    show_default=True,
    help="Which of its answers under the current prompt version to ask afresh.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@max_cost_option
@cli_errors
def ask_again(
    testset: str, judge_name: str, pairs: str, as_json: bool, max_cost: float | None
) -> None:
    """Ask the judge again about pairs of TESTSET it answered under its current prompt version
    (failed or unparsed ones by default), replacing the stored answers.

    With --max-cost it stops between batches before the money spent would pass the budget;
    the answers not asked again yet keep their stored answers (ask again to continue)."""
    test_set = testsets.require_by_name(testset)
    judge = judges.require_judge(judge_name)
    if not as_json:  # as `judges run`: the JSON stays one object (it has the cost)
        guess = judge_costs.estimate_run(test_set, judge, f"again:{pairs}")
        click.echo(f"Estimate: {guess.text()}", err=True)
    warn_keys(judge)
    bar, progress = _progress_bar()
    found = judges.run_judge(test_set, judge, f"again:{pairs}", progress, max_cost=max_cost)
    _report(found, bar, as_json)


@judges_group.command("archive")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help='Print {"judge", "archived", "changed"}.')
@cli_errors
def archive(name: str, as_json: bool) -> None:
    """Archive judge NAME: hidden from the label lists and suggestions, its answers kept."""
    judge = judges.require_judge(name)
    changed = judges.archive_judge(judge)
    _state(judge.name, True, changed, as_json)


@judges_group.command("restore")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help='Print {"judge", "archived", "changed"}.')
@cli_errors
def restore(name: str, as_json: bool) -> None:
    """Take judge NAME out of the archive."""
    judge = judges.require_judge(name)
    changed = judges.restore_judge(judge)
    _state(judge.name, False, changed, as_json)


def _state(name: str, archived: bool, changed: bool, as_json: bool) -> None:
    """Print what archive/restore did."""
    if as_json:
        click.echo(json.dumps({"judge": name, "archived": archived, "changed": changed}))
        return
    word = "archived" if archived else "in use"
    click.echo(f"Judge {name} is {word}{'' if changed else ' (it was already)'}.")


@judges_group.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help='Print {"judge", "deleted", ...}.')
@cli_errors
def delete(name: str, yes: bool, as_json: bool) -> None:
    """Delete judge NAME and every machine label it gave (audited; asks first unless --yes)."""
    judge = judges.require_judge(name)
    if not yes:
        count = judges.label_count(judge)
        click.confirm(
            f"Delete judge {judge.name} and its {counted(count, 'machine label')}?",
            abort=True,
            err=True,
        )
    gone = judges.delete_judge(judge)
    if as_json:
        click.echo(json.dumps(gone))
    else:
        labels = gone["machine_labels"]
        click.echo(f"Deleted judge {gone['judge']} and its {counted(labels, 'machine label')}.")


judges_group.add_command(probe)
judges_group.add_command(prices)
