"""`flask testset create|import|list|status|grant|revoke`: the same services as the web pages."""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from typing import TYPE_CHECKING

import click
from flask.cli import AppGroup

from ndcg_labeler.cli._common import cli_errors, write_out
from ndcg_labeler.cli._progress import terminal_progress
from ndcg_labeler.services import ServiceError, accounts, checklist, imports, interop, testsets

if TYPE_CHECKING:
    from ndcg_labeler.models import TestSet, User


# AppGroup: every subcommand runs inside the app context, also under FlaskCliRunner.
@click.group("testset", cls=AppGroup)
def testset_group() -> None:
    """Create test sets, import their files and choose their annotators."""


def _scale(value: str) -> int:
    """Parse --scale ourselves so that a bad value is a one-line error, not a usage dump."""
    if value.strip() not in ("3", "4"):
        raise ServiceError(f"--scale must be 3 (grades 0–3) or 4 (grades 0–4), not '{value}'")
    return int(value)


@testset_group.command("create")
@click.argument("name")
@click.option("--scale", default="3", show_default=True, help="3 for grades 0–3, 4 for 0–4.")
@cli_errors
def create(name: str, scale: str) -> None:
    """Create an empty test set NAME."""
    test_set = testsets.create_test_set(name, _scale(scale))
    click.echo(f"Created test set '{test_set.name}' (grades 0–{test_set.scale_max}).")


def _file(path: str | None, stack: ExitStack) -> imports.ImportFile | None:
    """The file at `path`, opened (so that progress can follow the bytes read)."""
    if path is None:
        return None
    if not os.path.isfile(path):
        raise ServiceError(f"{path}: no such file")
    # The absolute path too: an --only-referenced import remembers it to fetch from later.
    return imports.ImportFile(stack.enter_context(open(path, "rb")), path, os.path.abspath(path))


@testset_group.command("import")
@click.argument("name")
@click.option("--queries", metavar="FILE", help="BEIR queries.jsonl, TREC topics TSV or CSV.")
@click.option("--corpus", metavar="FILE", help="BEIR corpus.jsonl or CSV docid,text[,title].")
@click.option("--pool", metavar="FILE", help="Pairs to judge: a TREC run or TSV/CSV qid,docid.")
@click.option("--qrels", metavar="FILE", help="Existing judgments: TREC or BEIR qrels.")
@click.option("--source", metavar="NAME", help="Who the qrels' judgments belong to [file name].")
@click.option("--quepid", metavar="FILE", help="Quepid judgments CSV (query,docid,rating).")
@click.option("--srw-judgments", metavar="FILE", help="OpenSearch SRW judgment list (JSON).")
@click.option("--srw-queries", metavar="FILE", help="OpenSearch SRW query set (JSON or JSONL).")
@click.option("--ir-datasets", "ir_dataset", metavar="NAME", help="ir_datasets NAME (offline).")
@click.option(
    "--rating-map",
    metavar="MAP",
    help="Peer ratings onto grades: a scale '0-10' or pairs '1=0,2=1,3=2,4=3' [as grades].",
)
@click.option(
    "--only-referenced",
    is_flag=True,
    help="Keep only the corpus chunks that the set's pools, qrels and runs name.",
)
@cli_errors
def import_command(
    name: str,
    queries: str | None,
    corpus: str | None,
    pool: str | None,
    qrels: str | None,
    source: str | None,
    quepid: str | None,
    srw_judgments: str | None,
    srw_queries: str | None,
    ir_dataset: str | None,
    rating_map: str | None,
    only_referenced: bool,
) -> None:
    """Import files into test set NAME, all or nothing, and print what changed.

    Our own files (--queries, --corpus, --pool, --qrels) go together; a peer's file (--quepid,
    --srw-judgments, --srw-queries) or --ir-datasets goes alone. Runs in this process (no job
    worker); a progress bar goes to stderr when it is a terminal.
    """
    test_set = testsets.require_by_name(name)
    peers = {"quepid": quepid, "srw-judgments": srw_judgments, "srw-queries": srw_queries}
    chosen = [(fmt, path) for fmt, path in peers.items() if path is not None]
    if ir_dataset is not None:
        chosen.append(("ir-datasets", ir_dataset))
    if chosen:
        if len(chosen) > 1 or any(f is not None for f in (queries, corpus, pool, qrels)):
            raise ServiceError(
                "import a peer's file (--quepid, --srw-judgments, --srw-queries) or "
                "--ir-datasets on its own, without other files"
            )
        report = _import_peer(test_set, *chosen[0], rating_map, source)
        if not report.lines():
            click.echo(interop.NOTHING_NEW)
    else:
        if rating_map is not None:
            raise ServiceError("--rating-map applies to --quepid and --srw-judgments only")
        report = _import_own(test_set, queries, corpus, pool, qrels, source, only_referenced)
    for line in report.lines():
        click.echo(line)


def _import_peer(
    test_set: TestSet, fmt: str, what: str, rating_map: str | None, source: str | None
) -> imports.ImportReport:
    """A Quepid or SRW file, or an ir_datasets dataset, into the test set."""
    if rating_map is not None and fmt in ("ir-datasets", "srw-queries"):
        raise ServiceError("--rating-map applies to --quepid and --srw-judgments only")
    with ExitStack() as stack, terminal_progress() as progress:
        if fmt == "ir-datasets":
            return interop.import_ir_dataset(test_set, what, source=source, progress=progress)
        file = _file(what, stack)
        assert file is not None
        return interop.import_peer(
            test_set, fmt, file, rating_map=rating_map, source=source, progress=progress
        )


def _import_own(
    test_set: TestSet,
    queries: str | None,
    corpus: str | None,
    pool: str | None,
    qrels: str | None,
    source: str | None,
    only_referenced: bool = False,
) -> imports.ImportReport:
    """Our own files into the test set (the corpus only where named, with only_referenced)."""
    with ExitStack() as stack, terminal_progress() as progress:
        return imports.import_files(
            test_set,
            queries=_file(queries, stack),
            corpus=_file(corpus, stack),
            pool=_file(pool, stack),
            qrels=_file(qrels, stack),
            source=source,
            progress=progress,
            only_referenced=only_referenced,
        )


@testset_group.command("export")
@click.argument("name")
@click.option(
    "--format",
    "fmt",
    required=True,
    metavar="FORMAT",
    help="quepid (judgments CSV), srw-judgments or srw-queries (OpenSearch SRW JSON).",
)
@click.option("--aggregation", default=None, help="Grades under this policy [the set's own].")
@click.option("-o", "--output", metavar="FILE", help="Write here instead of to stdout.")
@cli_errors
def export_command(name: str, fmt: str, aggregation: str | None, output: str | None) -> None:
    """Write test set NAME's judgments or queries in Quepid's or OpenSearch SRW's shape."""
    test_set = testsets.require_by_name(name)
    body, _, _ = interop.export_test_set(test_set, fmt, aggregation)
    write_out(body, output)


@testset_group.command("list")
@cli_errors
def list_command() -> None:
    """Print every test set with its size and progress."""
    for test_set in testsets.all_test_sets():
        s = testsets.summary(test_set)
        outside = (
            f" (+{s.graded_outside_pool} graded outside the pool)" if s.graded_outside_pool else ""
        )
        click.echo(
            f"{test_set.name}\tgrades 0–{test_set.scale_max}\t{s.queries} queries\t"
            f"{s.chunks} chunks\t{s.judged_pairs}/{s.pairs} pairs judged{outside}"
        )


@testset_group.command("status")
@click.argument("name")
@click.option("--as", "username", default=None, help="What this person sees (default: an admin).")
@click.option("--json", "as_json", is_flag=True, help="Print the checklist as JSON.")
@cli_errors
def status(name: str, username: str | None, as_json: bool) -> None:
    """The checklist of test set NAME: queries, corpus, runs, pool, labels and judges, each done
    or not, and the one next action (or, for an annotator with nothing to label, what is missing
    and who can fix it)."""
    test_set = testsets.require_by_name(name)
    found = checklist.checklist(test_set, _person(username) if username else None)
    if as_json:
        click.echo(json.dumps(found.to_json()))
        return
    for step in found.steps:
        mark = "x" if step.done else " "
        click.echo(f"[{mark}] {step.label}: {step.state}")
    if found.action is not None:
        click.echo(f"Next: {found.action.text}")
    if found.blocked:
        click.echo(found.blocked)


def _person(username: str) -> User:
    user = accounts.get_by_username(username)
    if user is None or user.is_import_source:
        raise ServiceError(f"unknown user '{username}'")
    return user


@testset_group.command("grant")
@click.argument("name")
@click.argument("username")
@cli_errors
def grant(name: str, username: str) -> None:
    """Let USERNAME label test set NAME."""
    test_set = testsets.require_by_name(name)
    user = _person(username)
    changed = testsets.grant(test_set, user)
    click.echo(f"{username} {'may now' if changed else 'could already'} label '{test_set.name}'.")


@testset_group.command("revoke")
@click.argument("name")
@click.argument("username")
@cli_errors
def revoke(name: str, username: str) -> None:
    """Take test set NAME away from USERNAME (their grades stay)."""
    test_set = testsets.require_by_name(name)
    user = _person(username)
    changed = testsets.revoke(test_set, user)
    click.echo(
        f"{username} {'no longer labels' if changed else 'did not label'} '{test_set.name}'."
    )
