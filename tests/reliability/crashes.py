"""Helpers of the crash-consistency tests (test_crash.py, test_crash_jobs.py): `flask` commands
as child processes, kill -9 of a process group, the scores a fresh process computes, and the
check that no run is stored half."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import decode_docids
from ndcg_labeler.models import Run, RunQuery
from tests.reliability.annotators import ROOT, instance_settings

# The web-path crash tests' size multiplier: 1 in the suite, larger from bench/crash.py.
SCALE = max(1, int(os.environ.get("NDCG_CRASH_SCALE", "1") or 1))
# Trials killed at these fractions of the time one whole upload takes on this machine: three in
# the suite (early, middle, late: each test's trials took 30-100 s on each database), five from
# bench/crash.py.
KILL_AT = (0.3, 0.6, 0.9) if SCALE == 1 else (0.3, 0.45, 0.6, 0.75, 0.9)


def flask_cli(
    url: str, *args: str, instance: Path | None = None, stdout: int | None = subprocess.PIPE
) -> subprocess.Popen:
    """`flask --app app ARGS` on the database at `url`, in a process group of its own."""
    env = {**os.environ, "DATABASE_URL": url, "NDCG_SECRET_KEY": "crash", "NDCG_DEMO": "0"}
    if instance is not None:  # the server's instance folder: spooled uploads, the job queue
        env.update(instance_settings(instance))
    command = [sys.executable, "-m", "flask", "--app", "app", *args]
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=stdout, stderr=subprocess.DEVNULL, start_new_session=True
    )


def score(url: str, test_set: str = "Crash", run: str = "A") -> dict:
    """`flask run score TEST_SET RUN --json` in a fresh process (so the app must start)."""
    process = flask_cli(url, "run", "score", test_set, run, "--json")
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 0
    return json.loads(out)


def kill_group(process: subprocess.Popen) -> None:
    """kill -9 the process and every process of its group (gunicorn's workers, the worker's
    threads), no goodbye; then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def stored_runs(app: Flask) -> dict[str, tuple[int, int, int, int]]:
    """name -> (queries and entries the Run row claims, RunQuery rows and entries stored)."""
    with app.app_context():
        db.session.remove()
        out = {}
        for run in db.session.scalars(sa.select(Run)):
            lists = db.session.scalars(sa.select(RunQuery.docids).where(RunQuery.run_id == run.id))
            blobs = [decode_docids(b) for b in lists]
            entries = sum(b.count(b"\n") + 1 for b in blobs if b)
            out[run.name] = (run.num_queries, run.num_entries, len(blobs), entries)
        db.session.remove()
        db.engine.dispose()
        return out


def half_runs(runs: dict[str, tuple[int, int, int, int]]) -> list[str]:
    """The runs whose stored ranked lists are not all the Run row claims."""
    return [name for name, (q, e, *stored) in runs.items() if [q, e] != stored]
