"""`flask run compare TESTSET RUN_A RUN_B` and `flask pool TESTSET --depth N [--run RUN ...]`
or `flask pool TESTSET --for-compare A B [--depth N] [--k K] [--json] [--add]`."""

from __future__ import annotations

import json

import click
from flask.cli import with_appcontext

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.cli._progress import terminal_progress
from ndcg_labeler.cli.runs import run_group, scoring_options
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import (
    ServiceError,
    comparison,
    live,
    pooling,
    ppi,
    runs,
    testsets,
    whole_number,
)

# How many per-query rows the readable table shows (the JSON has them all).
TABLE_QUERIES = 20
# `pool --for-compare`'s k without --k (unless --depth is smaller), as the compare page's.
DEFAULT_K = 10
# How many pairs `pool --for-compare` shows without --json.
TABLE_PAIRS = 30


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _table(result: comparison.Comparison, name_a: str, name_b: str) -> list[str]:
    """The comparison as a readable table."""
    o, pair = result.options, result.first_pair
    lines = [
        f"NDCG@{o.k}, gain {o.gain}, ideal {o.ideal}, grades combined by {o.policy}"
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
        robust_statement(pair.robustness, o.top_grade, result.compared),
        "",
        f"Largest differences (of {len(result.deltas)}):",
        f"{'qid':<20}  {'A':>8}  {'B':>8}  {'B − A':>8}",
    ]
    for d in result.deltas[:TABLE_QUERIES]:
        lines.append(f"{d.qid:<20}  {d.a:>8.4f}  {d.b:>8.4f}  {d.delta:>+8.4f}")
    audit = result.labels_extra.get("audit")
    if audit:  # machine grades: never without how much people audited
        lines += ["", f"labels {o.shown_labels}: {audit['status']} for judge {audit['judge']}"]
        if audit["judge_failed_note"]:
            lines.append(audit["judge_failed_note"])
    if result.estimate is not None:
        lines.append(ppi.describe(result.estimate))
    return lines


def robust_statement(found: comparison.Robustness | None, top_grade: int, compared: int) -> str:
    """Whether the winner stays if every unjudged top-k chunk of either run had the top grade."""
    if compared == 0 or (found is not None and found.queries == 0):
        return (
            "Nothing could be compared: no query has NDCG defined in both runs (no judged "
            "chunk with a grade above 0), so there is no winner and it is not robust."
        )
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
@click.option(
    "--measure",
    "measures",
    multiple=True,
    help="Also compare these measures (repeat or comma-separate): ir_measures names "
    "(P(rel=2)@5, AP, bpref ...) or trec_eval's (P_5, map ...).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@cli_errors
def compare(
    testset: str,
    run_a: str,
    run_b: str,
    options: live.ScoreOptions,
    measures: tuple[str, ...],
    as_json: bool,
) -> None:
    """Compare RUN_B with RUN_A: means with 95% bootstrap intervals, paired tests, deltas.

    And whether the winner rests on unjudged chunks: "robust" (JSON robust,
    flips_if_unjudged_top, unjudged_pairs) says whether the sign of mean B − mean A stays the
    same when every unjudged chunk in the top k of either run gets the scale's top grade, as if
    judged so (both runs' ideals grow by them), and on how many distinct unjudged (query, chunk)
    pairs that rests. See the user guide's scoring conventions.

    --measure adds, per measure, each run's mean, B − A, wins/ties/losses and the paired t-test
    on the queries where it is defined in both (JSON "measures").
    """
    test_set = testsets.require_by_name(testset)
    a = runs.require_run(test_set, run_a)
    b = runs.require_run(test_set, run_b)
    extra = comparison.measures_block([a, b], measures, options)
    result = comparison.compare_runs([a, b], options)
    if as_json:
        out = result.to_json()
        if extra:
            out["measures"] = extra
        click.echo(json.dumps(out, ensure_ascii=False))
        return
    click.echo("\n".join([*_table(result, a.name, b.name), *map(_measure_line, extra)]))


def _measure_line(block: dict) -> str:
    """One --measure's comparison in a line."""
    a, b = (r["mean"] for r in block["runs"])
    pair = block["pairs"][0]
    p = "—" if pair["t_test_p"] is None else f"{pair['t_test_p']:.4g}"
    return (
        f"{block['measure']}: A {_four(a)}, B {_four(b)}, B − A {_four(pair['delta'])} over "
        f"{block['queries']} queries; B wins {pair['wins']}, ties {pair['ties']}, loses "
        f"{pair['losses']}; paired t-test p {p}"
    )


def _four(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


@click.command("pool")
@click.argument("testset")
@click.option(
    "--depth",
    default=None,
    help="Pool the top N of each query (required, except with --uncertain-first alone; with "
    "--for-compare the list's depth, by default k's top: 10 without --k).",
)
@click.option("--run", "run_names", multiple=True, help="A run to pool from (repeat); default all.")
@click.option(
    "--order-by-judge",
    "judge",
    default=None,
    help="Queue first the pairs whose grade by this machine judge would move NDCG most.",
)
@click.option(
    "--for-compare",
    "for_compare",
    nargs=2,
    metavar="A B",
    default=None,
    help="List the unjudged pairs of A's or B's top DEPTH by weight = top grade × "
    "|1/log2(rank_A + 1) − 1/log2(rank_B + 1)| (0 for a run without the chunk in its top "
    "DEPTH), largest first, ties by qid then docid (byte order); and the labels remaining "
    "before the comparison is robust. Adds nothing without --add.",
)
@click.option(
    "--uncertain-first",
    "uncertain_first",
    is_flag=True,
    help="With --order-by-judge ENSEMBLE: move the queued pairs its members disagree on most "
    "to the front of the queue (largest spread first); without --depth, only that.",
)
@click.option(
    "--k",
    "k",
    default=None,
    help="With --for-compare: NDCG@k of the flip test (default 10, or --depth when that is "
    "below 10: the flip test then weighs only the chunks listed).",
)
@click.option("--json", "as_json", is_flag=True, help="With --for-compare: the list as JSON.")
@click.option(
    "--add", "add", is_flag=True, help="With --for-compare: queue the pairs in that order."
)
@with_appcontext
@cli_errors
def pool(
    testset: str,
    depth: str | None,
    run_names: tuple[str, ...],
    judge: str | None,
    for_compare: tuple[str, str] | None,
    uncertain_first: bool,
    k: str | None,
    as_json: bool,
    add: bool,
) -> None:
    """Add the unjudged chunks of the runs' top DEPTH to TESTSET's labeling queue.

    With --for-compare A B: what to label next to decide between A and B (see docs:
    "What to label next").

    With --order-by-judge ENSEMBLE --uncertain-first: the queued pairs whose ensemble members
    disagree most come first (see docs: "Ensembles").
    """
    if uncertain_first and (not judge or for_compare):
        raise ServiceError("--uncertain-first goes with --order-by-judge ENSEMBLE")
    if depth is None and not for_compare:
        if uncertain_first:
            _uncertain_first(testsets.require_by_name(testset), judge or "")
            return
        raise click.UsageError("Missing option '--depth'.")
    test_set = testsets.require_by_name(testset)
    if for_compare:
        if run_names or judge:
            raise ServiceError(
                "--for-compare takes its two runs alone (no --run, --order-by-judge)"
            )
        # Read as the API and the compare page read them (pooling.compare_cut).
        _for_compare(test_set, for_compare, depth, k, as_json, add)
        return
    cut = whole_number(depth, "--depth")
    if as_json or add:
        raise ServiceError("--json and --add go with --for-compare")
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
    if uncertain_first:
        _uncertain_first(test_set, judge or "")


def _uncertain_first(test_set: TestSet, ensemble: str) -> None:
    """Move the pairs the ensemble's members disagree on to the front of the queue."""
    moved = pooling.queue_uncertain_first(test_set, ensemble)
    click.echo(
        f"Moved {moved} queued pairs where the members of {ensemble} disagree to the front of "
        "the queue (largest spread first)."
    )


def _for_compare(
    test_set: TestSet,
    names: tuple[str, str],
    asked_depth: str | None,
    k: str | None,
    as_json: bool,
    add: bool,
) -> None:
    """`flask pool SET --for-compare A B [--depth N] [--k K]`: the ordered list, a summary,
    or adding."""
    # A flip test at k deeper than the list would weigh chunks it never listed: --depth alone
    # below the default k sets k, as the compare page's list is its top k (the API's rule too).
    depth, cut = pooling.compare_cut(asked_depth, k)
    k_note = None
    if k is None and cut != DEFAULT_K:
        k_note = (
            f"The flip test is at k = {depth}, the --depth, as no --k was given "
            f"(--k {DEFAULT_K} for NDCG@{DEFAULT_K})."
        )
    options = live.parse_options({"k": str(cut)})
    a, b = (runs.require_run(test_set, name) for name in names)
    if add:
        done = pooling.add_for_compare(test_set, a, b, depth, options)
        plan = done.plan
    else:
        plan = pooling.plan_for_compare(test_set, a, b, depth, options)
    if as_json:
        click.echo(json.dumps(plan.to_json(), ensure_ascii=False))
    else:
        click.echo("\n".join(_order_table(plan)))
    if k_note:
        # On stderr with --json, so that stdout stays one JSON document.
        click.echo(k_note, err=as_json)
    if add:
        # On stderr with --json, so that stdout stays one JSON document.
        click.echo(
            f"Queued {done.added} new pairs and moved {done.requeued} queued ones into weight "
            f"order ({done.not_in_corpus} not in the corpus).",
            err=as_json,
        )


def _order_table(plan: pooling.CompareOrder) -> list[str]:
    """The ordered pairs as a readable table (the first TABLE_PAIRS) and the summary."""
    lines = [
        f"Unjudged pairs in the top {plan.depth} of {plan.run_a.name} (A) or {plan.run_b.name}"
        f" (B): {len(plan.pairs)}, by weight = top grade × |1/log2(rank_A + 1) − "
        "1/log2(rank_B + 1)|.",
        "",
        f"{'qid':<20}  {'docid':<24}  {'weight':>8}  {'rank A':>6}  {'rank B':>6}",
    ]
    for p in plan.pairs[:TABLE_PAIRS]:
        rank_a = "—" if p.rank_a is None else str(p.rank_a)
        rank_b = "—" if p.rank_b is None else str(p.rank_b)
        lines.append(f"{p.qid:<20}  {p.docid:<24}  {p.weight:>8.4f}  {rank_a:>6}  {rank_b:>6}")
    if len(plan.pairs) > TABLE_PAIRS:
        lines.append(f"… {len(plan.pairs) - TABLE_PAIRS} more (--json lists them all).")
    missing = plan.not_in_corpus(TABLE_PAIRS)
    if missing:
        lines.append(
            f"In no corpus, so no text to label by (import it first; --add leaves them out): "
            f"{', '.join(sorted(missing))}."
        )
    lines += ["", *_robust_lines(plan)]
    return lines


def _robust_lines(plan: pooling.CompareOrder) -> list[str]:
    """The flip test in words."""
    found = plan.robustness
    if found is None:
        return [f"Labels remaining before robust: not computed ({plan.note})."]
    if found.mean_delta is None:
        return ["Labels remaining before robust: no compared query (NDCG undefined in both)."]
    lines = [
        f"Mean NDCG@{plan.k} of B − A: {found.mean_delta:+.4f} today, "
        f"{found.mean_delta_if_top:+.4f} with every unjudged chunk of either top {plan.k} "
        "at the top grade."
    ]
    if found.robust:
        lines.append("Robust: the winner is the same either way (0 labels remaining).")
    elif found.labels_remaining is None:
        lines.append(
            "Not robust, and labeling this whole list would not make it so: raise --depth to "
            f"at least --k ({plan.k})."
        )
    else:
        lines.append(
            f"Not robust: {found.labels_remaining} labels remaining before robust, in this "
            "order, if each label finds the chunk not relevant (today's value)."
        )
    return lines
