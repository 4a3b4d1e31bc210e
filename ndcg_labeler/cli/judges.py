"""`flask judges add|run|agreement|audit|list`: machine judges from the command line.

`judges run` does the work in this process (a progress bar on stderr when it is a terminal)
and prints its JSON when done.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from flask.cli import AppGroup

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.services import judges, testsets


@click.group("judges", cls=AppGroup)
def judges_group() -> None:
    """Machine judges (LLMs behind an OpenAI-compatible endpoint)."""


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
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option("--max-tokens", type=int, default=judges.DEFAULT_MAX_TOKENS, show_default=True)
@click.option("--concurrency", type=int, default=8, show_default=True)
@click.option("--timeout", type=float, default=60.0, show_default=True)
@click.option("--rpm", type=int, default=0, help="Requests per minute (0: no limit).")
@cli_errors
def add(
    name: str,
    base_url: str,
    model: str,
    api_key_env: str,
    prompt_file: str | None,
    temperature: float,
    max_tokens: int,
    concurrency: int,
    timeout: float,
    rpm: int,
) -> None:
    """Define a judge NAME (the key stays in the environment; only its variable name is kept)."""
    template = Path(prompt_file).read_text(encoding="utf-8") if prompt_file else ""
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
        )
    except judges.TemplateRefused as exc:
        # The file's content is a bad parameter: click's usage error, exit status 2.
        raise click.BadParameter(str(exc), param_hint="--prompt") from None
    click.echo(f"Judge {judge.name} added ({judge.model} at {judge.base_url}).")


@judges_group.command("list")
def list_judges() -> None:
    """The judges, one per line."""
    for judge in judges.list_judges():
        click.echo(f"{judge.name}\t{judge.model}\t{judge.base_url}")


@judges_group.command("run")
@click.argument("testset")
@click.option("--judge", "judge_name", required=True)
@click.option("--pairs", default="unjudged", show_default=True, help="unjudged|all|human|sample:N")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@cli_errors
def run(testset: str, judge_name: str, pairs: str, as_json: bool) -> None:
    """Ask the judge about TESTSET's pairs (resumes: pairs already answered are skipped)."""
    test_set = testsets.require_by_name(testset)
    judge = judges.require_judge(judge_name)
    bar = None
    if sys.stderr.isatty():
        bar = click.progressbar(length=1, label="judging", file=sys.stderr)

    def progress(done: int, total: int, tokens: dict[str, int]) -> None:
        if bar is not None:
            bar.length = max(total, 1)
            bar.update(done - bar.pos)

    report = judges.run_judge(test_set, judge, pairs, progress)
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


@judges_group.command("agreement")
@click.argument("testset")
@click.option("--judge", "judge_name", required=True)
@click.option("--k", type=int, default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@cli_errors
def agreement(testset: str, judge_name: str, k: int, as_json: bool) -> None:
    """The judge's calibration against the human consensus on TESTSET."""
    found = judges.judge_agreement(
        testsets.require_by_name(testset), judges.require_judge(judge_name), k
    )
    if as_json:
        click.echo(json.dumps(found))
        return
    click.echo(
        f"{found['judge']} on {found['pairs']} pairs: κ quadratic {found['kappa_quadratic']}, "
        f"κ binary {found['kappa_binary']}, mean difference {found['mean_difference']}, "
        f"Kendall's τ of the runs {found['kendall_tau']}"
    )


@judges_group.command("audit")
@click.argument("testset")
@click.option("--judge", "judge_name", required=True)
@click.option(
    "--queries",
    "n",
    type=int,
    required=True,
    help="N: the sample's size; a larger N than before extends the same sample.",
)
@click.option(
    "--seed",
    type=int,
    default=None,
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
    testset: str, judge_name: str, n: int, seed: int | None, reseed: bool, as_json: bool
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
    state = judges.draw_audit(test_set, judge, n, seed=seed, reseed=reseed)
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
