"""Start-up stays light: the app and `flask --help` do not import the slow libraries, and
importing the package changes nothing while the entry points set the runtime knobs.

Every CLI command pays start-up, so the heavy libraries load where they are used: Alembic on
`flask db`, pyarrow in the run parser and the live engine's joins, scipy/scikit-learn/
krippendorff in the statistics, markdown-it for guidelines, httpx and jmespath for machine
judges and endpoints, huey and redis for the job queue.

`run list` and a first `run score` with default options answer from the stored per-query
figures (the `run_score` rows): they import none of the heavy libraries and still answer right
when the run's ranked lists are gone from the database.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.models import RunQuery
from tests.factory import build_dashboard

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("alembic", "pyarrow", "scipy", "sklearn", "krippendorff", "markdown_it", "httpx")
HEAVY += ("jmespath", "huey", "redis", "pandas", "limits", "flask_limiter", "rich")
HEAVY += ("authlib", "joserfc", "cryptography", "bm25s", "Stemmer")
# A venv that still has Flask-Limiter installed (it was a dependency) loads it, with `limits` and
# `rich`, through its `flask limiter` CLI plugin in every `flask` command: not ours to avoid.
PLUGIN = ("limits", "flask_limiter", "rich") if importlib.util.find_spec("flask_limiter") else ()
# The web layer (factory.py): what serving needs and a command that serves no page must not
# build, and the services only other `flask run` subcommands use (issue 30: `run list` in a new
# process). Each name stands for the module and everything under it.
WEB = ("ndcg_labeler.views", "ndcg_labeler.forms", "ndcg_labeler.web_extensions")
WEB += ("ndcg_labeler.throttle", "ndcg_labeler.rendering", "wtforms", "flask_wtf", "zxcvbn")
NOT_FOR_RUN_LIST = (*WEB, "ndcg_labeler.services.imports", "ndcg_labeler.services.interop")
NOT_FOR_RUN_LIST += ("ndcg_labeler.services.ppi", "ndcg_labeler.services.judges")
NOT_FOR_RUN_LIST += ("ndcg_labeler.services.accounts", "ndcg_labeler.services.dashboard")
# Current list lines are read, not scored: neither the live engine nor numpy (lazy front doors,
# ndcg_labeler.lazy).
NOT_FOR_RUN_LIST += (
    "numpy",
    "ndcg_labeler.services.live.engine",
    "ndcg_labeler.scoring.many_queries",
)
PROBE = """
import io, contextlib, json, sys
{body}
print(json.dumps(sorted(sys.modules)))
"""


def _heavy(modules: list[str]) -> list[str]:
    """The HEAVY libraries among these module names."""
    return sorted({m.split(".")[0] for m in modules} & set(HEAVY))


def _among(modules: list[str], names: tuple[str, ...]) -> list[str]:
    """The modules that are one of `names` or inside one of them."""
    return [m for m in modules if any(m == n or m.startswith(f"{n}.") for n in names)]


def _loaded(body: str) -> list[str]:
    code = PROBE.format(body=body)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return _heavy(json.loads(out.strip().splitlines()[-1]))


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


# `flask --app app ARGS` in this process; what it printed goes to stderr.
CLI_PROBE = """
sys.argv = ['flask', '--app', 'app', *{args!r}]
from flask.cli import main
out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        main()
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(out.getvalue()), file=sys.stderr)
"""


def _cli_modules(app: Flask, *args: str) -> tuple[list[str], str]:
    """Run a command in a new process on the app's database: every module loaded, output."""
    env = {
        **os.environ,
        "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
        "NDCG_INSTANCE_PATH": app.instance_path,
        "NDCG_DEMO": "0",
    }
    code = PROBE.format(body=CLI_PROBE.format(args=list(args)))
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    return modules, json.loads(done.stderr.strip().splitlines()[-1])


def _cli(app: Flask, *args: str) -> tuple[list[str], str]:
    """Run a command in a new process on the app's database: heavy modules loaded, output."""
    modules, out = _cli_modules(app, *args)
    return [m for m in _heavy(modules) if m not in PLUGIN], out


def _without_entries(app: Flask) -> None:
    """The dashboard scenario with the runs' ranked lists deleted: only stored figures remain."""
    build_dashboard(app)
    with app.app_context():
        db.session.execute(sa.delete(RunQuery))
        db.session.commit()
        db.session.remove()


# NDCG@10 of run A by hand (factory's scenario; linear gain, ideal from every judged grade).
L3, L5 = math.log2(3), math.log2(5)
A10 = {
    "q1": (1 + 3 / 2) / (3 + 3 / L3 + 2 / 2 + 1 / L5),  # c 1, d 0, a 3 / x 3, a 3, b 2, c 1
    "q2": 1.0,  # e1 2, e2 1, e3 0 is the ideal order
    "q3": (1 / L3) / 1.0,  # f2 unjudged, f1 1
    "q5": 1.0,  # q4 has no grade: undefined, left out of the mean
}


def test_run_list_answers_from_stored_figures_only(app: Flask) -> None:
    _without_entries(app)
    heavy, out = _cli(app, "run", "list", "dash")
    assert heavy == []
    lines = [line.split("\t") for line in out.splitlines()]
    assert [line[0] for line in lines] == ["A", "B"]
    assert lines[0][3] == f"NDCG@10 {sum(A10.values()) / 4:.4f} over 4 defined queries"
    assert lines[0][4].startswith("95% t interval [")  # without scipy: see scoring/intervals.py


def test_run_list_builds_no_web_layer_and_loads_only_the_services_it_calls(app: Flask) -> None:
    """`run list` in a new process (issue 30: ≤ 0.5 s) pays for neither the pages (views,
    forms, login: factory.py builds them on first need in a command process) nor the services
    of the other `flask run` subcommands (imported where those use them)."""
    build_dashboard(app)
    modules, out = _cli_modules(app, "run", "list", "dash")
    assert [line.split("\t")[0] for line in out.splitlines()] == ["A", "B"]
    assert _among(modules, NOT_FOR_RUN_LIST) == []


def test_first_run_score_answers_from_stored_per_query_results(app: Flask) -> None:
    _without_entries(app)
    heavy, out = _cli(app, "run", "score", "dash", "A", "--json")
    assert heavy == []
    rows = {row["qid"]: row["ndcg"] for row in json.loads(out)["queries"]}
    assert rows.pop("q4") is None
    assert rows == pytest.approx(A10)


# The entry points: `gunicorn app:app` and `flask --app app` import app.py; every `flask`
# process loads the `flask run` plugin first, before the app.
ENTRIES = {"app.py": "import app", "flask": "from ndcg_labeler.cli import run_command"}
KNOBS = ("ARROW_DEFAULT_MEMORY_POOL", "NUMPY_MADVISE_HUGEPAGE", "OPENBLAS_NUM_THREADS")


def test_importing_the_package_and_building_the_app_change_no_environment(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in KNOBS}
    env["NDCG_INSTANCE_PATH"] = str(tmp_path)
    code = (
        "import os\n"
        "before = dict(os.environ)\n"
        "import ndcg_labeler, ndcg_labeler.cli, ndcg_labeler.formats.runs\n"
        "from ndcg_labeler.factory import create_app\n"
        "create_app()\n"
        "print(dict(os.environ) == before)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, env=env
    ).stdout
    assert out.strip().splitlines()[-1] == "True"


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(("chosen", "expected"), [(None, "system"), ("jemalloc", "jemalloc")])
def test_the_run_parser_allocates_from_the_c_heap_unless_the_environment_names_a_pool(
    entry: str, chosen: str | None, expected: str
) -> None:
    """pyarrow's bundled mimalloc made a 7,000 x 1,000 upload ~0.5 s slower and erratic here
    (bench/README); the setting must be in place before any of our modules loads pyarrow."""
    code = "import pyarrow\nprint(pyarrow.default_memory_pool().backend_name)"
    assert _after_entry(entry, "ARROW_DEFAULT_MEMORY_POOL", chosen, code) == expected


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(("chosen", "expected"), [(None, "False"), ("1", "True")])
def test_numpy_asks_for_no_huge_pages_unless_the_environment_says_so(
    entry: str, chosen: str | None, expected: str
) -> None:
    """Huge pages made the parser's reserved arrays slower to fill here (bench/README); numpy
    reads the setting when it is first imported, so the entry points set it before that."""
    code = "from numpy._core import multiarray\nprint(multiarray._get_madvise_hugepage())"
    assert _after_entry(entry, "NUMPY_MADVISE_HUGEPAGE", chosen, code) == expected


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(("chosen", "expected"), [(None, "1"), ("2", "2")])
def test_numpy_starts_no_blas_threads_unless_the_environment_asks(
    entry: str, chosen: str | None, expected: str
) -> None:
    """OpenBLAS's threads spin on the other core for ~0.1 s after numpy loads (bench/README);
    the count is read when the library loads, so the entry points set it before that."""
    code = (
        "import threadpoolctl\n"
        "print([i['num_threads'] for i in threadpoolctl.threadpool_info()"
        " if i['internal_api'] == 'openblas'][0])"
    )
    assert _after_entry(entry, "OPENBLAS_NUM_THREADS", chosen, code) == expected


def _after_entry(entry: str, variable: str, chosen: str | None, code: str) -> str:
    """The last line `code` prints in a new process, run after the entry point `entry` (and
    the run parser) loaded, with `variable` set to `chosen` (or unset when None)."""
    env = {k: v for k, v in os.environ.items() if k != variable}
    if chosen is not None:
        env[variable] = chosen
    code = f"{ENTRIES[entry]}\nfrom ndcg_labeler.formats.runs import read_run\n{code}"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, env=env
    ).stdout
    return out.strip().splitlines()[-1]


def test_a_command_process_collects_garbage_again_once_the_app_is_built(tmp_path: Path) -> None:
    """The command line's entry pauses the collector for start-up only (ndcg_labeler.entry)."""
    code = (
        "import gc\n"
        f"{ENTRIES['flask']}\n"
        "paused = not gc.isenabled()\n"
        "import app\n"
        "print(paused, gc.isenabled(), gc.get_freeze_count() > 10_000)"
    )
    env = {**os.environ, "NDCG_INSTANCE_PATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, env=env
    ).stdout
    assert out.strip().splitlines()[-1] == "True True True"
