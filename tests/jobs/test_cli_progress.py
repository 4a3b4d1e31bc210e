"""The CLI works in the foreground and draws its progress bar only on a terminal."""

from __future__ import annotations

import io
import os
from pathlib import Path

from ndcg_labeler.cli._progress import terminal_progress, wants_bar
from ndcg_labeler.services import no_progress
from tests.jobs.test_import_jobs import queries_csv


def test_no_bar_when_stderr_is_not_a_terminal() -> None:
    stream = io.StringIO()
    assert not wants_bar(stream)
    with terminal_progress(stream) as progress:
        assert progress is no_progress
    assert stream.getvalue() == ""


def test_bar_on_a_pseudo_terminal() -> None:
    master, slave = os.openpty()
    with os.fdopen(slave, "w") as tty:
        assert wants_bar(tty)
        with terminal_progress(tty) as progress:
            progress("parse", 50, 200, 1000)
    drawn = os.read(master, 4096).decode()
    os.close(master)
    assert "reading" in drawn and " 25.0%" in drawn and "1,000 rows" in drawn


def test_cli_import_prints_only_the_report(runner, tmp_path: Path) -> None:
    path = tmp_path / "queries.csv"
    path.write_bytes(queries_csv(12_000))
    assert runner.invoke(args=["testset", "create", "cli"]).exit_code == 0
    result = runner.invoke(args=["testset", "import", "cli", "--queries", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout == "queries: 12000 created, 0 updated, 0 unchanged\n"
    assert result.stderr == ""
