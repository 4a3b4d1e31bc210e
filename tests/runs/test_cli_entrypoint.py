"""The real `flask --app app run ...` command line: subcommands upload/score, and still a server."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FLASK = str(Path(sys.executable).parent / "flask")
DEMO = "Demo: HR policies (example data)"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A fresh instance folder and SQLite database, migrated and bootstrapped with the demo."""
    environ = {
        **os.environ,
        "NDCG_INSTANCE_PATH": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "NDCG_DEMO": "1",
        "NDCG_ADMIN_PASSWORD": "entrypoint-secret-1",
    }
    for args in (["db", "upgrade"], ["bootstrap"]):
        done = flask(environ, *args)
        assert done.returncode == 0, done.stderr
    return environ


def flask(environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FLASK, "--app", "app", *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_run_subcommands_work_from_the_shell(env: dict[str, str], tmp_path: Path) -> None:
    scored = flask(env, "run", "score", DEMO, "Retriever B (Embeddings)", "--k", "5", "--json")
    assert scored.returncode == 0, scored.stderr
    q1 = next(q for q in json.loads(scored.stdout)["queries"] if q["qid"] == "q1")
    assert round(q1["ndcg"], 3) == 0.821
    path = tmp_path / "mine.trec"
    path.write_text("q1 Q0 chunk_17 1 9.5 mine\n")
    uploaded = flask(env, "run", "upload", DEMO, str(path), "--name", "mine")
    assert uploaded.returncode == 0, uploaded.stderr
    assert "Uploaded run 'mine'" in uploaded.stdout
    bad = flask(env, "run", "score", DEMO, "nope")
    assert bad.returncode == 1
    assert bad.stderr.strip() == f"Error: test set '{DEMO}' has no run named 'nope'"


def test_a_finished_command_leaves_everything_in_the_database_file(
    env: dict[str, str], tmp_path: Path
) -> None:
    # SQLite copies its write-ahead log into the database file when the last connection
    # closes: a copy of the file alone, made once the commands are done, is a whole backup.
    created = subprocess.run(
        [FLASK, "--app", "app", "user", "create", "carol", "--role", "annotator"],
        cwd=ROOT, env=env, input="carol-secret-123\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    log = tmp_path / "db.sqlite3-wal"
    assert not log.exists() or log.stat().st_size == 0
    alone = sqlite3.connect(f"file:{tmp_path / 'db.sqlite3'}?immutable=1", uri=True)
    try:
        users = alone.execute("SELECT username, role FROM user WHERE role != 'import'").fetchall()
        runs = alone.execute("SELECT count(*) FROM run").fetchone()
    finally:
        alone.close()
    assert sorted(users) == [("admin", "admin"), ("carol", "annotator")]
    assert runs == (2,)  # the demo's


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_bare_run_still_serves_the_app(env: dict[str, str]) -> None:
    port = _free_port()
    # The port through FLASK_RUN_PORT, as Flask's own `run` reads it.
    server = subprocess.Popen(
        [FLASK, "--app", "app", "run", "--host", "127.0.0.1"],
        cwd=ROOT,
        env={**env, "FLASK_RUN_PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=2) as page:
                    assert page.status == 200
                    assert b"Log in" in page.read()
                    break
            except OSError:
                assert server.poll() is None, "the development server exited"
                assert time.monotonic() < deadline, "the development server did not answer"
                time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(timeout=10)
