"""Helpers shared by the CLI modules: one-line errors and reading secrets."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click
import sqlalchemy as sa

from ndcg_labeler.formats import FormatError
from ndcg_labeler.services import ServiceError, noun

if TYPE_CHECKING:
    from ndcg_labeler.models import Run

# A table the database lacks, as SQLite and PostgreSQL say it.
_MISSING_TABLE = re.compile(r'no such table: (\S+)|relation "([^"]+)" does not exist')


def _missing_table(exc: sa.exc.DBAPIError) -> str | None:
    """The table a database error says is missing, or None for any other error."""
    found = _MISSING_TABLE.search(str(exc.orig))
    return (found.group(1) or found.group(2)) if found else None


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Turn a refused input into `Error: <reason>` on stderr and exit status 1."""
    try:
        yield
    except (ServiceError, FormatError) as exc:
        raise click.ClickException(str(exc)) from None
    except sa.exc.DBAPIError as exc:
        # A command before `flask db upgrade` (the first `flask bootstrap`) met a bare
        # database: say what to run rather than print SQLAlchemy's traceback.
        table = _missing_table(exc)
        if table is None:
            raise
        raise click.ClickException(
            f"the database has no table '{table}': it was never set up or is older than this "
            "version; run `flask --app app db upgrade` first"
        ) from None
    except OSError as exc:
        raise click.ClickException(
            f"{getattr(exc, 'filename', '') or ''}: {exc.strerror}"
        ) from None


def stdin_is_terminal() -> bool:
    """True when a person may answer a question on standard input (not a pipe, cron or CI)."""
    return sys.stdin is not None and sys.stdin.isatty()


def read_password(prompt: str = "Password") -> str:
    """Prompt twice on a terminal; otherwise read one line from standard input."""
    if stdin_is_terminal():
        return str(click.prompt(prompt, hide_input=True, confirmation_prompt=True))
    line = sys.stdin.readline() if sys.stdin is not None else ""
    return line.rstrip("\r\n")


def cli_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator form of one_line_errors for command callbacks."""
    import functools

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_line_errors():
            return func(*args, **kwargs)

    return wrapper


def write_out(body: str, output: str | None) -> None:
    """The body to a file (UTF-8, newlines as given) or to stdout."""
    if output is None:
        click.echo(body, nl=False)
        return
    with open(output, "w", encoding="utf-8", newline="") as handle:
        handle.write(body)


# A judge run's, an ask-again's and a probe's budget: one option, one help text.
def _budget(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """The budget as judge_costs reads it: a wrong one is refused in the form's words."""
    from ndcg_labeler.services import judge_costs  # kept off the start-up of every command

    try:
        return judge_costs.read_budget(value)
    except ServiceError as exc:
        raise click.ClickException(str(exc)) from None


# Read as text by the service (judge_costs.read_budget), so "two" is refused in the same
# sentence as 0, here and in the browser forms.
max_cost_option = click.option(
    "--max-cost",
    default=None,
    callback=_budget,
    help="Budget in dollars (needs the judge's prices): stop cleanly before passing it.",
)


def run_size(run: Run) -> str:
    """A run's size as the commands say it: '1 query, 1 ranked entry', '3 queries, 6 ranked
    entries'."""
    queries, entries = run.num_queries, run.num_entries
    return (
        f"{queries} {noun(queries, 'query', 'queries')}, "
        f"{entries} ranked {noun(entries, 'entry', 'entries')}"
    )
