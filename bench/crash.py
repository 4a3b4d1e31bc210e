"""Crash consistency at full size (issue 12; a script).

`python -m bench.crash [--scale 5] [--database-url URL]` runs the crash suite's web-path trials
(tests/reliability/test_crash_jobs.py: kill -9 of gunicorn during a browser run upload, and of
the job worker during a background run upload, 5 points each) with runs `--scale` times the
suite's 400,000 lines (5: 2,000,000 lines, ~38 MB), and the CLI upload and import trials of
tests/reliability/test_crash.py at the same scale (5: 2,000,000-line runs, 150,000-chunk
imports; the suite runs 400,000 lines and 30,000 chunks). Each
trial prints its line (half runs, unchanged scores, how the job ended) in the security summary.
PostgreSQL when a database URL is given (its tables are emptied by the suite's fixtures).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=5)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    env = {**os.environ, "NDCG_CRASH_SCALE": str(args.scale)}
    if args.database_url:
        env["TEST_DATABASE_URL"] = args.database_url
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/reliability/test_crash_jobs.py",
        "tests/reliability/test_crash.py",
    ]
    raise SystemExit(subprocess.call(command, cwd=ROOT, env=env))


if __name__ == "__main__":
    main()
