"""Every example of the Python client's page and of the HTTP API's page, run as written against
a live server on 127.0.0.1: the code blocks are read from the pages themselves, and only the
server's address, the token and (for ir_datasets) the dataset's name are put in.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
import subprocess
import textwrap
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from werkzeug.serving import make_server

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import accounts, jobs
from ndcg_labeler.services import runs as run_service
from tests.factory import build_test_set, make_user, trec
from tests.interop.test_ir_datasets import datasets  # noqa: F401 - the tiny ir_datasets fixture

ROOT = Path(__file__).resolve().parents[2]
CLIENT_PAGE = ROOT / "docs" / "user-guide" / "python-client.md"
API_PAGE = ROOT / "docs" / "reference" / "http-api.md"
QUERIES = {f"q{n}": f"policy question {n}" for n in range(1, 21)}
QRELS = [("q1", "doc-7", 2), ("q1", "doc-3", 0), ("q2", "doc-9", 1), ("q17", "doc-1", 3)]
BASELINE = {"q1": ["doc-3", "doc-7"], "q2": ["doc-9"], "q17": ["doc-2", "doc-1"]}


def code_blocks(page: Path, language: str) -> list[str]:
    """The page's fenced blocks of `language`, dedented (a block may sit in a list item)."""
    text = page.read_text(encoding="utf-8")
    found = re.findall(rf"^([ \t]*)```{language}\n(.*?)^\1```", text, re.M | re.S)
    return [textwrap.dedent(indent + body.replace("\n" + indent, "\n")) for indent, body in found]


@contextlib.contextmanager
def live(app: Flask, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The app served on a free port with its job worker; (address, an admin's token)."""
    tmp_path.mkdir(exist_ok=True)
    app.config["NDCG_JOB_THRESHOLD_MB"] = 10 / (1024 * 1024)  # the tiny dataset is "large"
    app.config["NDCG_JOBS_SQLITE"] = str(tmp_path / "jobs-queue.sqlite3")
    app.config["NDCG_JOBS_QUEUE"] = f"test-{uuid.uuid4().hex}"
    admin = make_user(app, "admin", "admin")
    with app.app_context():
        token = accounts.create_token(db.session.get_one(User, admin))
        db.session.remove()
    worker = jobs.worker(app, threads=1)
    worker._set_signal_handlers = lambda: None  # pytest keeps its own SIGINT handler
    worker.start()
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{http.server_port}", token
    finally:
        http.shutdown()
        thread.join(timeout=10)
        http.server_close()
        worker.stop(graceful=True)


def _help_desk(app: Flask, *runs: tuple[str, dict[str, list[str]]]) -> None:
    """Test set 1, "Help desk" (0–3), with its grades and the given runs."""
    with app.app_context():
        desk = build_test_set("Help desk", QUERIES, QRELS)
        for name, ranked in runs:
            run_service.upload_run(desk, io.BytesIO(trec(ranked)), f"{name}.trec", name, None)
        db.session.remove()


def _client_page_files(where: Path) -> None:
    """The files the client page's examples name, in the directory they run in."""
    (where / "runs").mkdir()
    (where / "more-queries.tsv").write_text("q21\tparental leave abroad\n")
    (where / "labels.qrels").write_text("q2 0 doc-4 1\nq21 0 doc-8 2\n")
    # docid 'a' twice for q1, the second time on line 3, as the page's comment says.
    (where / "runs" / "broken.trec").write_text(
        "q1 Q0 a 1 3.0 x\nq1 Q0 b 2 2.0 x\nq1 Q0 a 3 1.0 x\n"
    )
    (where / "runs" / "candidate.trec").write_text(trec(BASELINE).decode().replace("doc-3", "d-5"))
    (where / "case_12_judgements.csv").write_text(
        "query,docid,rating\npolicy question 1,doc-11,10\nremote work abroad,doc-12,4\n"
    )
    (where / "query-set.json").write_text('{"queryText": "sick leave during holidays"}\n')
    (where / "corpus.jsonl").write_text('{"_id": "doc-7", "text": "Leave policy"}\n')


def test_the_python_client_pages_examples_run_as_written(
    app: Flask,
    datasets: tuple[str, str, str],  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _help_desk(app, ("bm25", BASELINE))
    _client_page_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    blocks = code_blocks(CLIENT_PAGE, "python")
    assert len(blocks) == 5, "the page's examples changed: check this test still runs them all"
    scope: dict[str, object] = {}
    with live(app, tmp_path / "queue") as (url, token):
        for number, code in enumerate(blocks, 1):
            code = code.replace('"https://ndcg.example.org"', repr(url))
            code = code.replace('"ndcg_..."', repr(token))
            code = code.replace('"beir/scifact/test"', repr(datasets[0]))
            exec(compile(code, f"{CLIENT_PAGE.name}, example {number}", "exec"), scope)
            if "runs/broken.trec" in code:  # its comment says what it prints
                printed = capsys.readouterr().out
                assert printed.startswith("400 broken.trec:3: docid 'a' appears twice for query q1")
    assert scope["verdict"]["outcome"] in ("pass", "fail", "inconclusive")  # type: ignore[index]
    assert Path("gate.xml").read_text(encoding="utf-8").lstrip().startswith("<?xml")
    assert Path("help-desk-judgments.csv").exists() and Path("bm25-v2-snapshot.csv").exists()
    assert scope["srw"]["judgmentRatings"]  # type: ignore[index]


def _commands(block: str) -> list[str]:
    """The block's shell commands, a line continued by a backslash joined to the next."""
    return [c.strip() for c in block.replace("\\\n", " ").splitlines() if c.strip()]


def test_the_http_api_pages_examples_run_as_written(app: Flask, tmp_path: Path) -> None:
    # Runs 1 and 2 first: the page's scores example asks for run 3, the one it uploads.
    _help_desk(app, ("first", BASELINE), ("second", BASELINE))
    (tmp_path / "run.trec.gz").write_bytes(gzip.compress(trec(BASELINE)))
    (tmp_path / "corpus.jsonl.gz").write_bytes(
        gzip.compress(b'{"_id": "doc-7", "text": "Leave policy"}\n')
    )
    blocks = code_blocks(API_PAGE, "sh")
    commands = [command for block in blocks for command in _commands(block)]
    assert len(commands) == 3, "the page's examples changed: check this test still runs them all"
    answers = []
    with live(app, tmp_path / "queue") as (url, token):
        for command in commands:
            command = command.replace("http://127.0.0.1:5000", url)
            command = command.replace("https://labels.example.com", url)
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=tmp_path,
                env={"TOKEN": token, "PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, (command, done.stderr)
            answers.append(json.loads(done.stdout))
    uploaded, scores, queued = answers
    assert uploaded["name"] == "bm25" and uploaded["id"] == 3
    assert scores["k"] == 10 and {q["qid"] for q in scores["queries"]} >= {"q1", "q2", "q17"}
    assert queued["job"]["kind"] == "import"
