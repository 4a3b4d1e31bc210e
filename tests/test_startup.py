"""Start-up stays light: the app and `flask --help` do not import the slow libraries.

Every CLI command pays start-up, so the heavy libraries load where they are used: Alembic on
`flask db`, pyarrow in the run parser and the live engine's joins, scipy/scikit-learn/
krippendorff in the statistics, markdown-it for guidelines, httpx for machine judges.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("alembic", "pyarrow", "scipy", "sklearn", "krippendorff", "markdown_it", "httpx")
PROBE = """
import io, contextlib, json, sys
{body}
print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))))
"""


def _loaded(body: str) -> list[str]:
    code = PROBE.format(body=body, heavy=HEAVY)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
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
    assert _loaded(body) == []
