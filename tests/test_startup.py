"""Start-up stays light: the app and `flask --help` do not import the slow libraries.

Every CLI command pays start-up, so the heavy libraries load where they are used: Alembic on
`flask db`, pyarrow in the run parser and the live engine's joins, scipy/scikit-learn/
krippendorff in the statistics, markdown-it for guidelines, httpx and jmespath for machine
judges and endpoints, huey and redis for the job queue.

`run list` and a first `run score` with default options read the stored per-query figures
(the `run_score` rows): they neither import the heavy libraries nor read the run's entries.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from flask import Flask

from tests.factory import build_dashboard

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("alembic", "pyarrow", "scipy", "sklearn", "krippendorff", "markdown_it", "httpx")
HEAVY += ("jmespath", "huey", "redis", "pandas", "limits", "flask_limiter", "rich")
# A venv that still has Flask-Limiter installed (it was a dependency) loads it, with `limits` and
# `rich`, through its `flask limiter` CLI plugin in every `flask` command: not ours to avoid.
PLUGIN = ("limits", "flask_limiter", "rich") if importlib.util.find_spec("flask_limiter") else ()
PROBE = """
import io, contextlib, json, sys
{body}
print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))))
"""


def _loaded(body: str, env: dict[str, str] | None = None) -> list[str]:
    code = PROBE.format(body=body, heavy=HEAVY)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, env=env
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "body",
    [
        "import app",
        (
            "sys.argv = ['flask', '--app', 'app', '--help']\n"
            "from flask.cli import main\n"
            "try:\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        main()\n"
            "except SystemExit:\n"
            "    pass"
        ),
    ],
    ids=["import app", "flask --help"],
)
def test_no_heavy_library_is_imported_at_start_up(body: str) -> None:
    ignored = PLUGIN if "flask" in body else ()
    assert [m for m in _loaded(body) if m not in ignored] == []


# `flask --app app ARGS` in this process; what it printed and the SQL it ran go to stderr.
CLI_PROBE = """
import sqlalchemy as sa
from sqlalchemy.engine import Engine
statements = []
sa.event.listen(Engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
sys.argv = ['flask', '--app', 'app', *{args!r}]
from flask.cli import main
out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        main()
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps({{"out": out.getvalue(), "sql": statements}}), file=sys.stderr)
"""


def _cli(app: Flask, *args: str) -> tuple[list[str], str, list[str]]:
    """Run a command in a new process on the app's database: heavy modules, output, SQL."""
    env = {
        **os.environ,
        "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
        "NDCG_INSTANCE_PATH": app.instance_path,
        "NDCG_DEMO": "0",
    }
    code = PROBE.format(body=CLI_PROBE.format(args=list(args)), heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stderr.strip().splitlines()[-1])
    heavy = [m for m in json.loads(done.stdout.strip().splitlines()[-1]) if m not in PLUGIN]
    return heavy, report["out"], report["sql"]


def _reads_entries(sql: list[str]) -> bool:
    return any(re.search(r"\bFROM run_query\b", s, re.IGNORECASE) for s in sql)


def test_run_list_reads_stored_figures_only(app: Flask) -> None:
    build_dashboard(app)
    heavy, out, sql = _cli(app, "run", "list", "dash")
    assert heavy == []
    assert not _reads_entries(sql)
    # Both runs, each on its own line, in the order they were uploaded.
    assert [line.split("\t")[0] for line in out.splitlines()] == ["A", "B"]


def test_first_run_score_reads_stored_per_query_results(app: Flask) -> None:
    build_dashboard(app)
    heavy, out, sql = _cli(app, "run", "score", "dash", "A", "--json")
    assert heavy == []
    assert not _reads_entries(sql)
    rows = {row["qid"]: row for row in json.loads(out)["queries"]}
    # q2: e1 2, e2 1, e3 0 is the ideal order (factory's hand computation): NDCG 1.
    assert rows["q2"]["ndcg"] == pytest.approx(1.0)
    # q1 by hand: A ranks c 1, d 0, a 3, y -; the ideal is x 3, a 3, b 2, c 1, d 0.
    idcg = 3 + 3 / math.log2(3) + 2 / 2 + 1 / math.log2(5)
    assert rows["q1"]["ndcg"] == pytest.approx((1 + 3 / 2) / idcg)
