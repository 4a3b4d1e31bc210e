"""`flask run upload|score|list|delete ...`: runs from the command line; bare `flask run` serves.

The group is named `run`, like Flask's development-server command. Flask looks its own commands
up before the app's, so this group replaces the built-in one through the `flask.commands` entry
point (pyproject.toml) and hands anything that is not one of its subcommands to Flask's
original `run` command: `flask --app app run --port 5000` still serves, while
`flask --app app run upload ...` uploads.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
from collections.abc import Callable
from typing import Any, ClassVar

import click
from flask.cli import AppGroup
from flask.cli import run_command as flask_run_command

from ndcg_labeler import entry
from ndcg_labeler.cli._common import cli_errors, one_line_errors, stdin_is_terminal
from ndcg_labeler.models import Run
from ndcg_labeler.services import ServiceError, counted, live, noun, runs, testsets

_SERVE = "ndcg_labeler.serve_args"


class RunGroup(AppGroup):
    """A command group that falls back to Flask's development server for unknown input."""

    # Subcommands defined in other modules, which attach them to this group on import.
    ATTACHED: ClassVar[dict[str, str]] = {
        "archive": "run_retention",
        "bm25": "evaluation",
        "export": "peer_exports",
        "compare": "dashboard",
        "fuse": "evaluation",
        "series": "evaluation",
        "tag": "run_retention",
        "upload": "run_upload",
    }

    def _load_subcommands(self, *names: str) -> None:
        """Import the modules that define these subcommands (all of them when none are named)."""
        for name in names or tuple(self.ATTACHED):
            if name in self.ATTACHED:
                importlib.import_module(f"ndcg_labeler.cli.{self.ATTACHED[name]}")

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Subcommands and --help parse as usual; anything else is the server's arguments."""
        known = (*self.commands, *self.ATTACHED, *ctx.help_option_names)
        if args and args[0] in known:
            return super().parse_args(ctx, args)
        ctx.meta[_SERVE] = list(args)
        return []

    def invoke(self, ctx: click.Context) -> Any:
        """Run the chosen subcommand, or Flask's `run` with the arguments given."""
        serve_args = ctx.meta.pop(_SERVE, None)
        if serve_args is None:
            return super().invoke(ctx)
        # A server: its pages are built with the app, before the first request (entry.py).
        entry.web_at_start()
        # Parent is the `flask` group itself, as for the built-in command: FLASK_RUN_* variables
        # (FLASK_RUN_PORT...) keep working, and the app's ScriptInfo is found there.
        parent = ctx.parent or ctx
        with flask_run_command.make_context(ctx.info_name, serve_args, parent=parent) as sub:
            return flask_run_command.invoke(sub)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Subcommands, including those other modules attach."""
        self._load_subcommands()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        """A subcommand by name, including those other modules attach."""
        self._load_subcommands(name)
        return super().get_command(ctx, name)


@click.group("run", cls=RunGroup)
def run_group() -> None:
    """Upload and score retriever runs: `flask run upload|score|list|delete ...`.

    Without a subcommand this is Flask's development server (`flask run --port 5000`);
    `flask run serve --help` lists the server's options.
    """


run_group.add_command(flask_run_command, "serve")


_SCORING_OPTIONS = (
    click.option("--k", "k", default="10", show_default=True, help="Cutoff k of NDCG@k."),
    click.option("--gain", default="linear", show_default=True, help="linear or exp (2^g − 1)."),
    click.option("--ideal", default="judged", show_default=True, help="judged or retrieved."),
    click.option("--judged-only", is_flag=True, help="Rank only judged chunks (condensed lists)."),
    click.option("--aggregation", default=None, help="Override the test set's policy."),
    click.option(
        "--labels",
        default="human",
        show_default=True,
        help=(
            "human, machine:JUDGE, fill:JUDGE or ppi:JUDGE (the judge's NDCG per query, and the "
            "PPI++ estimate of the human mean over all queries from the judge's audit sample)."
        ),
    ),
)


def scoring_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --k/--gain/--ideal/--judged-only/--aggregation/--labels; the command gets `options`."""

    @functools.wraps(func)
    def wrapper(
        *args: Any,
        k: str,
        gain: str,
        ideal: str,
        judged_only: bool,
        aggregation: str | None,
        labels: str,
        **kwargs: Any,
    ) -> Any:
        with one_line_errors():
            options = live.parse_options(
                {
                    "k": k,
                    "gain": gain,
                    "ideal": ideal,
                    "judged_only": judged_only,
                    "aggregation": aggregation,
                    "labels": labels,
                }
            )
        return func(*args, options=options, **kwargs)

    for option in reversed(_SCORING_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


def _fmt(value: float | None, width: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—".rjust(width)
    return f"{value:.4f}".rjust(width)


def _table(result: live.RunScores, extra: list[live.MeasureValues] | None = None) -> list[str]:
    """A readable table: the settings, the mean and what it covers, then the queries; the
    measures asked for with --measure (`extra`) as more columns, their means above."""
    extra = extra or []
    o, k = result.options, result.k
    mean = "—" if result.mean_ndcg is None else f"{result.mean_ndcg:.4f}"
    lines = [
        f"Run '{result.run_name}' on test set '{result.test_set_name}'",
        f"NDCG@{k}, gain {o.gain}, ideal {o.ideal}, grades combined by {o.policy}"
        + (", judged only" if o.judged_only else ""),
        f"mean NDCG@{k} = {mean} over {result.queries_in_mean} of {result.num_queries} "
        f"{noun(result.num_queries, 'query', 'queries')}"
        f" ({result.num_undefined} undefined: IDCG 0; {result.num_missing} missing from the"
        " run, scored 0)",
        *_trec_all_lines(result),
        _interval(result),
        _sensitivity(result),
        *(_measure_mean(m) for m in extra),
        "",
    ]
    width = max([len("qid"), *(len(q) for q in result.qids)])
    header = (
        f"{'qid':<{width}}  {'NDCG@' + str(k):>9}  {'DCG':>9}  {'IDCG':>9}  {'gap':>9}"
        f"  {'judged@' + str(k):>10}  {'rel':>5}  {'if-top':>9}  {'condensed':>9}"
        + "".join(f"  {m.measure.shown:>{_width(m)}}" for m in extra)
        + "  note"
    )
    lines.append(header)
    # Straight from the arrays: the rows' query texts (one read of every text) are not shown.
    for i in result.by_gap():
        ndcg, dcg, idcg = float(result.ndcg[i]), float(result.dcg[i]), float(result.idcg[i])
        undefined = "undefined" if math.isnan(ndcg) else ""
        note = "missing from run" if result.missing[i] else undefined
        line = (
            f"{result.qids[i]:<{width}}  {_fmt(ndcg, 9)}  {_fmt(dcg, 9)}  {_fmt(idcg, 9)}"
            f"  {_fmt(idcg - dcg, 9)}  {_fmt(float(result.judged_at_k[i]), 10)}"
            f"  {int(result.num_rel[i]):>5}  {_fmt(float(result.ndcg_if_unjudged_top[i]), 9)}"
            f"  {_fmt(float(result.ndcg_condensed[i]), 9)}"
            + "".join(f"  {_fmt(float(m.values[i]), _width(m))}" for m in extra)
            + f"  {note}"
        )
        lines.append(line.rstrip())
    return lines


def _width(m: live.MeasureValues) -> int:
    return max(9, len(m.measure.shown))


def _measure_mean(m: live.MeasureValues) -> str:
    """The mean of a --measure column and the queries it covers."""
    mean = "—" if m.mean is None else f"{m.mean:.4f}"
    defined = int(sum(1 for v in m.values.tolist() if v == v))
    total = len(m.qids)
    return (
        f"mean {m.measure.shown} = {mean} over {defined} of {total} "
        f"{noun(total, 'query', 'queries')}"
    )


@run_group.command("score")
@click.argument("testset")
@click.argument("run")
@scoring_options
@click.option(
    "--measure",
    "measures",
    multiple=True,
    help="More columns (repeat or comma-separate): ir_measures names (nDCG@10, P(rel=2)@5, AP, "
    "bpref, Success@10 ...) or trec_eval's (ndcg_cut_10, P_5, map ...).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@click.option(
    "--trec",
    "as_trec",
    is_flag=True,
    help="trec_eval's -q layout (its ndcg_cut_K: linear gain, ideal from all judged chunks; "
    "--gain exp adds ndcg_cut_exp_K, --ideal retrieved ndcg_cut_retrieved_K).",
)
@cli_errors
def score(
    testset: str,
    run: str,
    options: live.ScoreOptions,
    measures: tuple[str, ...],
    as_json: bool,
    as_trec: bool,
) -> None:
    """Score RUN of TESTSET with the current grades: NDCG@k per query and the mean.

    Beside each NDCG@k, its sensitivity to unjudged chunks: "if-top" (JSON
    ndcg_if_unjudged_top, mean_if_unjudged_top) is NDCG@k if every unjudged chunk of the top
    k had the scale's top grade, which then joins the ideal too; "condensed" (ndcg_condensed,
    mean_condensed) is NDCG@k with the unjudged chunks removed before the cut at k. Their
    means cover the queries of the mean. See the user guide's scoring conventions.

    The mean covers the queries with a defined NDCG@k (a query with no relevant judged chunk
    is undefined and left out). Where trec_eval's `all` differs (it counts such a judged query
    as 0 and leaves out queries missing from the run), it is printed beside the mean as
    "trec_eval all"; --json has both: mean_ndcg over queries_in_mean, mean_trec_all over
    queries_trec_all, with queries_undefined and queries_missing. --trec's `all` line is
    trec_eval's own.

    --measure adds columns, each with its mean over the queries where it is defined (--json:
    "measures" with each one's mean, and each query's values under its "measures").
    """
    # Imported here: the judges it reaches are more than `run list` should load (issue 30).
    from ndcg_labeler.services import ppi

    if as_json and as_trec:
        raise ServiceError("choose one of --json and --trec")
    if as_trec and measures:
        raise ServiceError("--trec prints trec_eval's standard measures: drop --measure")
    test_set = testsets.require_by_name(testset)
    found = runs.require_run(test_set, run)
    if as_trec:
        click.echo("\n".join(live.trec_eval_lines(found, options)))
        return
    extra = live.named_measures(found, measures, options)
    if as_json:
        out = live.MeasureValues.into_json(ppi.score_json(found, options), extra)
        click.echo(json.dumps(out, ensure_ascii=False))
        return
    result = live.score_run(found, options)
    click.echo("\n".join([*_labels_lines(found, options), *_table(result, extra)]))


@run_group.command("list")
@click.argument("testset")
@click.option("--search", default="", help="Only runs whose name or notes contain this text.")
@click.option("--tag", default="", help="Only runs with this tag.")
@click.option(
    "--archived/--whole",
    default=None,
    help="Only archived runs (--archived) or only whole ones (--whole); default: both.",
)
@click.option(
    "--sort",
    type=click.Choice(runs.SORTS),
    default="oldest",
    show_default=True,
    help="best/worst: by the mean NDCG@10 stored when each run was last scored.",
)
@click.option("--limit", type=int, default=50, show_default=True, help="Runs to list.")
@click.option("--offset", type=int, default=0, show_default=True, help="Runs to skip first.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@cli_errors
def list_runs(
    testset: str,
    search: str,
    tag: str,
    archived: bool | None,
    sort: str,
    limit: int,
    offset: int,
    as_json: bool,
) -> None:
    """List the runs of TESTSET with their mean NDCG@10 and its 95% t interval.

    The mean is over the defined queries; where trec_eval's `all` differs, a last column
    gives it with its query count (--json: mean_trec_all, queries_trec_all). Only the runs
    listed are scored: --limit and --offset page through many.
    """
    test_set = testsets.require_by_name(testset)
    wanted = runs.RunFilter(search, tag, archived, None, sort, limit, offset)
    page = runs.find_runs(test_set, wanted)
    lines = live.listed_scores(page.runs)
    listed = [(found, lines[found.id]) for found in page.runs]
    if as_json:
        rows = [
            {
                "run": found.name,
                "queries": found.num_queries,
                "entries": found.num_entries,
                "k": result.k,
                "mean_ndcg": result.mean_ndcg,
                **result.interval_json(),
                **result.sensitivity_json(),
                **result.means_json(),
                "tags": found.tag_names,
                "pinned": found.pinned,
                "archived": found.archived,
                "kept_depth": found.kept_depth,
            }
            for found, result in listed
        ]
        out = {"testset": test_set.name, "total": page.total, "offset": offset, "runs": rows}
        click.echo(json.dumps(out, ensure_ascii=False))
        return
    for found, result in listed:
        mean = "—" if result.mean_ndcg is None else f"{result.mean_ndcg:.4f}"
        marks = [*(["pinned"] if found.pinned else []), *found.tag_names]
        if found.archived:
            marks.append(f"archived (top {found.kept_depth})")
        click.echo(
            f"{found.name}\t{found.num_queries} {noun(found.num_queries, 'query', 'queries')}\t"
            f"{found.num_entries} {noun(found.num_entries, 'entry', 'entries')}\t"
            f"NDCG@10 {mean} over {result.queries_in_mean} defined "
            f"{noun(result.queries_in_mean, 'query', 'queries')}\t{_interval(result)}"
            + "".join(f"\t{line}" for line in _trec_all_lines(result))
            + (f"\t[{', '.join(marks)}]" if marks else "")
        )
    if not listed and not offset:
        # An empty stdout alone reads like a hang or a bug; the why goes to stderr.
        filtered = bool(search or tag) or archived is not None
        click.echo(
            f"No run of '{test_set.name}' matches."
            if filtered
            else f"'{test_set.name}' has no runs yet: flask run upload adds one.",
            err=True,
        )
    if page.has_next or offset:
        shown = f"{offset + 1}-{offset + len(listed)}" if listed else "none"
        runs_word = noun(page.total, "run")
        click.echo(f"({shown} of {page.total} {runs_word}; --offset and --limit page)", err=True)


def _labels_lines(found: Run, options: live.ScoreOptions) -> list[str]:
    """Under machine:, fill: and ppi: labels: the audit status and the PPI++ estimate."""
    from ndcg_labeler.services import ppi  # as in `score`, its one caller

    status = ppi.audit_status(found.test_set, options.labels)
    if status is None:
        return []
    lines = [f"labels {options.labels}: {status.text} for judge {status.judge}"]
    if status.failed_note:
        lines.append(status.failed_note)
    figures = ppi.run_estimate(found, options)
    if figures is not None:
        lines.append(ppi.describe(figures))
    return lines


def _sensitivity(result: live.RunScores) -> str:
    """The means if unjudged chunks had the top grade, and on condensed lists."""
    top, condensed = result.mean_if_unjudged_top, result.mean_condensed
    return (
        f"if every unjudged chunk of the top {result.k} had grade {result.options.top_grade}:"
        f" {_fmt(top, 0)}; condensed (unjudged removed): {_fmt(condensed, 0)}"
    )


def _trec_all_lines(result: live.RunScores | live.ListedScores) -> list[str]:
    """trec_eval's `all` beside our mean, named and explained, where the two differ."""
    if not result.means_differ:
        return []
    value = "—" if result.mean_trec_all is None else f"{result.mean_trec_all:.4f}"
    # Named as the trec_eval layout writes this figure (ndcg_cut_retrieved_10 under
    # ideal=retrieved): trec_eval's own ndcg_cut_10 is linear gain over the judged ideal. A
    # listed line is always at the default options, trec_eval's (and naming live.RunScores
    # here would load the scoring modules, numpy with them, into `run list`).
    tag = getattr(result.options, "layout_tag", "")
    return [
        f"trec_eval all ndcg_cut{tag}_{result.k} = {value} over {result.queries_trec_all} "
        f"{noun(result.queries_trec_all, 'query', 'queries')}"
        " (it counts undefined queries as 0 and leaves out those missing from the run;"
        " see Scoring conventions in the manual)"
    ]


def _interval(result: live.RunScores | live.ListedScores) -> str:
    """The mean's 95% interval as a listing shows it, or why there is none."""
    found = result.interval
    if found.low is None or found.high is None:
        return f"no 95% interval: {found.reason}"
    return f"95% {found.method} interval [{found.low:.4f}, {found.high:.4f}] n={found.n}"


@run_group.command("delete")
@click.argument("testset")
@click.argument("run")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation on a terminal.")
@cli_errors
def delete(testset: str, run: str, yes: bool) -> None:
    """Delete RUN of TESTSET (audited). On a terminal it asks first, naming the run and its
    size, unless --yes; with standard input not a terminal (a script, cron, CI) it deletes
    without asking, as it always has."""
    test_set = testsets.require_by_name(testset)
    found = runs.require_run(test_set, run)

    def ask() -> None:
        queries, entries = found.num_queries, found.num_entries
        click.confirm(
            f"Delete run '{found.name}' of test set '{test_set.name}' "
            f"({counted(queries, 'query', 'queries')}, "
            f"{counted(entries, 'ranked entry', 'ranked entries')})?",
            abort=True,
            err=True,
        )

    # Asked only once the delete would be accepted: a refused one is an error, not a question.
    runs.delete_run(found, confirm=None if yes or not stdin_is_terminal() else ask)
    click.echo(f"Deleted run '{run}' of test set '{test_set.name}'.")
