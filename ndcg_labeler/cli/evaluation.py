"""`flask gate TESTSET --baseline RUN --candidate RUN`, the runs made from others or from the
corpus: `flask run fuse TESTSET RUN RUN...`, `flask run bm25 TESTSET`, and a series' trend:
`flask run series TESTSET [NAME]`."""

from __future__ import annotations

import json
from pathlib import Path

import click
from flask.cli import with_appcontext

from ndcg_labeler.cli._common import cli_errors, run_size
from ndcg_labeler.cli._progress import terminal_progress
from ndcg_labeler.cli.runs import run_group
from ndcg_labeler.formats import FormatError
from ndcg_labeler.services import (
    ServiceError,
    gate,
    live,
    noun,
    runs,
    series,
    testsets,
    whole_number,
)

BAD_INPUT = 2
# Exit status per outcome; --inconclusive maps the third one for pipelines that must be binary.
EXIT_CODES = {"pass": 0, "fail": 1, "inconclusive": 3}


class BadInput(click.ClickException):
    """A refused input: `Error: <reason>` on stderr and exit status 2."""

    exit_code = BAD_INPUT


def _number(name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ServiceError(f"{name} must be a number, not '{text}'") from None


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{path}: {exc.strerror}") from None


@click.command("gate")
@click.argument("testset")
@click.option(
    "--baseline",
    required=True,
    help="The run to hold the line (name or id; id:N or name:X when one is the other's).",
)
@click.option(
    "--candidate",
    required=True,
    help="The run that must not regress (name or id; id:N or name:X as for --baseline).",
)
@click.option(
    "--measure",
    "measures",
    multiple=True,
    help=f"Repeat or comma-separate: {gate.MEASURE_HELP}. Default ndcg_cut_10.",
)
@click.option(
    "--max-drop",
    default=f"{gate.DEFAULT_MAX_DROP:g}",
    show_default=True,
    help="Tolerated drop of a mean (the non-inferiority margin).",
)
@click.option("--alpha", default="0.05", show_default=True, help="Significance level.")
@click.option(
    "--labels",
    default="human",
    show_default=True,
    help=(
        "Whose grades: human, machine:JUDGE, fill:JUDGE (human first, the judge's elsewhere) "
        "or ppi:JUDGE (the PPI++ estimate from the judge's grades and its human audit)."
    ),
)
@click.option(
    "--inconclusive",
    "when_inconclusive",
    type=click.Choice(["pass", "fail"]),
    default=None,
    help="Exit as if an inconclusive verdict passed (0) or failed (1) instead of exiting 3.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as one JSON object.")
@click.option("--junit", "junit_path", default=None, help="Write a JUnit XML report here.")
@click.option("--markdown", "markdown_path", default=None, help="Write a Markdown report here.")
@with_appcontext
def gate_command(
    testset: str,
    baseline: str,
    candidate: str,
    measures: tuple[str, ...],
    max_drop: str,
    alpha: str,
    labels: str,
    when_inconclusive: str | None,
    as_json: bool,
    junit_path: str | None,
    markdown_path: str | None,
) -> None:
    """Pass, fail or leave open CANDIDATE against BASELINE on TESTSET, measure by measure.

    With d = candidate − baseline per paired query, a measure fails when mean d < −max-drop
    and the Holm-adjusted two-sided paired t-test has p < alpha; it passes when it does not
    fail and the one-sided t-test of H0: mean d ≤ −max-drop has p < alpha; otherwise it is
    inconclusive and the report says about how many queries would decide it. The run passes
    when every measure passes, fails when one fails.

    With --labels ppi:JUDGE the same rules apply to the PPI++ estimate of mean d over all
    queries (an undefined value counting 0), with z-tests in place of t-tests; below 10
    audited queries of the judge's sample a measure stays inconclusive ("audit more queries").

    Exit 0 pass, 1 fail, 3 inconclusive (or as --inconclusive says), 2 on bad input.
    """
    try:
        test_set = testsets.get_by_ref(testset)
        if test_set is None:
            raise ServiceError(f"unknown test set '{testset}'")
        found = []
        for ref in (baseline, candidate):
            run = runs.get_run(test_set, ref)
            if run is None:
                raise ServiceError(f"test set '{test_set.name}' has no run '{ref}'")
            found.append(run)
        result = gate.run_gate(
            test_set,
            found[0],
            found[1],
            measures=list(measures),
            max_drop=_number("--max-drop", max_drop),
            alpha=_number("--alpha", alpha),
            labels=labels,
            max_drop_name="--max-drop",
            alpha_name="--alpha",
        )
    except (ServiceError, FormatError) as exc:
        raise BadInput(str(exc)) from None
    if junit_path:
        _write(junit_path, gate.junit_xml(result))
    if markdown_path:
        _write(markdown_path, gate.markdown(result))
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        click.echo(gate.markdown(result).rstrip("\n"))
    outcome = result.outcome
    if outcome == "inconclusive" and when_inconclusive:
        outcome = when_inconclusive
    if EXIT_CODES[outcome]:
        raise click.exceptions.Exit(EXIT_CODES[outcome])


@run_group.command("fuse")
@click.argument("testset")
@click.argument("refs", nargs=-1, required=True, metavar="RUNS...")
@click.option("--method", default="rrf", show_default=True, help="rrf, combsum or combmnz.")
@click.option("--name", required=True, help="Name of the fused run.")
@click.option("--k", "k", default="60", show_default=True, help="RRF's constant k.")
@click.option("--depth", default=None, help="Keep the top N per query (default: the inputs').")
@cli_errors
def fuse(
    testset: str, refs: tuple[str, ...], method: str, name: str, k: str, depth: str | None
) -> None:
    """Create run NAME of TESTSET by fusing two or more RUNS (names or ids; id:N or name:X
    when a plain one is one run's name and another's id)."""
    test_set = testsets.require_by_name(testset)
    found = []
    for ref in refs:
        run = runs.get_run(test_set, ref)
        if run is None:
            raise ServiceError(f"test set '{test_set.name}' has no run '{ref}'")
        found.append(run)
    constant = whole_number(k, "--k")
    cut = None if depth is None else whole_number(depth, "--depth")
    with terminal_progress() as progress:  # a bar on stderr when it is a terminal
        fused = runs.fuse_runs(
            test_set, found, name, None, method=method, k=constant, depth=cut, progress=progress
        )
    click.echo(
        f"Created run '{fused.name}' in test set '{test_set.name}': {run_size(fused)}. "
        f"{fused.notes}."
    )


@run_group.command("bm25")
@click.argument("testset")
@click.option("--name", default="BM25", show_default=True, help="Name of the new run.")
@click.option("--depth", default=100, show_default=True, help="Chunks kept per query.")
@click.option("--k1", default=0.9, show_default=True, help="BM25's term-frequency saturation.")
@click.option("--b", "b", default=0.4, show_default=True, help="BM25's length normalisation.")
@click.option("--json", "as_json", is_flag=True, help="Print the new run as JSON.")
@cli_errors
def bm25(testset: str, name: str, depth: int, k1: float, b: float, as_json: bool) -> None:
    """Create run NAME of TESTSET: a BM25 ranking of its corpus for each of its queries."""
    test_set = testsets.require_by_name(testset)
    settings = runs.Bm25Settings(depth=depth, k1=k1, b=b)
    with terminal_progress() as progress:  # a bar on stderr when it is a terminal
        run = runs.create_bm25_run(test_set, name, None, settings, progress=progress)
    if as_json:
        click.echo(json.dumps({
            "id": run.id, "name": run.name, "queries": run.num_queries,
            "entries": run.num_entries, "depth": run.depth, "k1": k1, "b": b,
            "notes": run.notes,
        }))  # fmt: skip
        return
    click.echo(
        f"Created run '{run.name}' in test set '{test_set.name}': {run_size(run)}. {run.notes}."
    )


def _left_out(found: series.Trend) -> str:
    """The line naming the runs a trend left out: archived shallower than its k."""
    names = ", ".join(f"{run.name} (top {run.kept_depth})" for run in found.left_out)
    return f"Left out at k={found.k}, archived to fewer entries per query: {names}"


def _fmt(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


@run_group.command("series")
@click.argument("testset")
@click.argument("name", required=False)
@click.option("--k", "k", type=int, default=10, show_default=True, help="Cutoff k of NDCG@k.")
@click.option(
    "--pin", default=None, help="Pin this run (id or name, or id:N, name:X) as the baseline."
)
@click.option("--unpin", is_flag=True, help="Unpin the baseline (the last passing run is used).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@cli_errors
def series_command(
    testset: str, name: str | None, k: int, pin: str | None, unpin: bool, as_json: bool
) -> None:
    """List TESTSET's series, or NAME's trend: per run mean NDCG@k with its 95% t interval,
    judged@k, and the change against the previous run (* = paired t-test p < 0.05)."""
    test_set = testsets.require_by_name(testset)
    if name is None:
        if pin or unpin:
            raise ServiceError("name the series whose baseline to pin")
        found = series.list_series(test_set)
        if as_json:
            listed = [{"series": s.name, "runs": s.runs, "latest": s.latest.name} for s in found]
            click.echo(json.dumps({"series": listed}, ensure_ascii=False))
            return
        for summary in found:
            runs_word = noun(summary.runs, "run")
            click.echo(f"{summary.name}\t{summary.runs} {runs_word}\tlatest {summary.latest.name}")
        if not found:
            click.echo(f"Test set '{test_set.name}' has no series yet (flask run upload --series).")
        return
    if pin and unpin:
        raise ServiceError("give --pin RUN or --unpin, not both")
    if pin or unpin:
        pinned = series.pin_baseline(test_set, name, None if unpin else pin, None)
        what = f"run '{pinned.name}'" if pinned else "the last passing run (unpinned)"
        click.echo(f"Series '{name}' is now gated against {what}.", err=as_json)
    found_trend = series.trend(test_set, name, live.ScoreOptions(k=k))
    if not (found_trend.points or found_trend.left_out or pin or unpin):
        raise ServiceError(f"test set '{test_set.name}' has no series named '{name}'")
    if as_json:
        out = found_trend.to_json()
        base, why = series.baseline(test_set, name)
        out["baseline"] = {"run": base.name if base else None, "why": why}
        click.echo(json.dumps(out, ensure_ascii=False))
        return
    click.echo(f"run\tuploaded\tNDCG@{k}\t95% CI\tjudged@{k}\tΔ vs previous\tp")
    for p in found_trend.points:
        ci = f"{_fmt(p.ci_low)}–{_fmt(p.ci_high)}" if p.ci_low is not None else "—"
        mark = " *" if p.significant else ""
        uploaded = f"{p.run.uploaded_at:%Y-%m-%d %H:%M}"
        delta = "—" if p.delta is None else f"{p.delta:+.4f}{mark}"
        click.echo(
            f"{p.run.name}\t{uploaded}\t{_fmt(p.mean)}\t{ci}\t{_fmt(p.judged, 3)}\t{delta}\t"
            f"{_fmt(p.p_value, 3)}"
        )
    if found_trend.left_out:
        click.echo(_left_out(found_trend), err=True)
