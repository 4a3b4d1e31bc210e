"""`flask testset import SET --ir-datasets NAME`: read from ir_datasets' local cache, never online.

A tiny dataset is registered in-process: its files are Downloads whose cache paths exist (a
downloaded dataset) or do not (one that is not downloaded); the remote source is a URL on a
reserved .invalid domain, which the offline guard refuses before any request is made.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Job, Query, TestSet, User
from ndcg_labeler.services import interop, jobs
from ndcg_labeler.services.accounts import create_token
from tests.factory import make_test_set
from tests.jobs.test_import_jobs import job_id_of, wait_for

ir_datasets = pytest.importorskip("ir_datasets")
from ir_datasets.datasets.base import Dataset  # noqa: E402
from ir_datasets.formats import BaseQueries, TrecQrels, TsvDocs, TsvQueries  # noqa: E402
from ir_datasets.util import Download, RequestsDownload  # noqa: E402

URL = "https://files.example.invalid/"
HOME: list[Path] = []  # where the fixture wrote the tiny datasets' files


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """Names of a downloaded tiny dataset, of one not downloaded and of one graded 0–4."""
    home = tmp_path_factory.mktemp("irds")
    HOME[:] = [home]
    (home / "queries.tsv").write_text("1\tred dress\n2\tblue shoes\n")
    (home / "docs.tsv").write_text("d1\ta red dress\nd2\ta blue shoe\nd3\ta hat\n")
    # -1 (judged non-relevant in some collections) must become 0; 2 stays 2.
    (home / "qrels").write_text("1 0 d1 2\n1 0 d3 -1\n2 0 d2 1\n")
    (home / "qrels4").write_text("1 0 d1 4\n")

    def file(name: str, where: Path) -> Download:
        return Download([RequestsDownload(URL + name)], cache_path=str(where / name))

    downloaded, missing = "ndcg-test/tiny", "ndcg-test/missing"
    if downloaded not in ir_datasets.registry:
        defs = {0: "not", 1: "some", 2: "very"}
        ir_datasets.registry.register(
            downloaded,
            Dataset(
                TsvQueries(file("queries.tsv", home)),
                TsvDocs(file("docs.tsv", home)),
                TrecQrels(file("qrels", home), defs),
            ),
        )
        nowhere = home / "absent"
        ir_datasets.registry.register(missing, Dataset(TsvQueries(file("queries.tsv", nowhere))))
        four = TrecQrels(file("qrels4", home), {4: "perfect"})
        ir_datasets.registry.register(
            "ndcg-test/four", Dataset(TsvQueries(file("queries.tsv", home)), four)
        )
    return downloaded, missing, "ndcg-test/four"


def test_imports_queries_docs_and_qrels(
    app: Flask, runner: FlaskCliRunner, datasets: tuple[str, str, str]
) -> None:
    runner.invoke(args=["testset", "create", "A"])
    result = runner.invoke(args=["testset", "import", "A", "--ir-datasets", datasets[0]])
    assert result.exit_code == 0, result.output + result.stderr
    assert "queries: 2 created" in result.stdout and "chunks: 3 created" in result.stdout
    assert "judgments of source 'ir_datasets:ndcg-test/tiny': 3 created" in result.stdout
    with app.app_context():
        test_set = db.session.scalar(sa.select(TestSet).where(TestSet.name == "A"))
        rows = set(interop.judgment_rows(test_set))
        texts = dict(db.session.execute(sa.select(Query.qid, Query.text)).all())
        chunk = db.session.scalar(sa.select(Chunk.text).where(Chunk.docid == "d2"))
    assert texts == {"1": "red dress", "2": "blue shoes"}
    assert chunk == "a blue shoe"
    assert rows == {("red dress", "d1", 2), ("red dress", "d3", 0), ("blue shoes", "d2", 1)}


def test_refuses_grades_above_the_scale_and_changes_nothing(
    app: Flask, runner: FlaskCliRunner, datasets: tuple[str, str, str]
) -> None:
    runner.invoke(args=["testset", "create", "A"])
    result = runner.invoke(args=["testset", "import", "A", "--ir-datasets", datasets[2]])
    assert result.exit_code == 1
    assert "has grade 4 (query 1, doc d1), above this test set's scale 0–3" in result.stderr
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count()).select_from(Query)) == 0


def test_not_downloaded_and_unknown_names_are_clear(
    app: Flask, runner: FlaskCliRunner, datasets: tuple[str, str, str]
) -> None:
    runner.invoke(args=["testset", "create", "A"])
    result = runner.invoke(args=["testset", "import", "A", "--ir-datasets", datasets[1]])
    assert result.exit_code == 1
    assert "dataset 'ndcg-test/missing' is not downloaded" in result.stderr
    assert "IR_DATASETS_HOME" in result.stderr
    result = runner.invoke(args=["testset", "import", "A", "--ir-datasets", "no/such-set"])
    assert result.exit_code == 1 and "ir_datasets has no dataset named 'no/such-set'" in (
        result.stderr
    )


def test_not_installed_says_how_to_install(
    app: Flask, runner: FlaskCliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # import ir_datasets now fails
    runner.invoke(args=["testset", "create", "A"])
    result = runner.invoke(args=["testset", "import", "A", "--ir-datasets", "x"])
    assert result.exit_code == 1
    assert "pip install 'ndcg-labeler[ir_datasets]'" in result.stderr


class _Opaque(BaseQueries):
    """Queries from a file this module names: not one of ir_datasets' own objects."""

    def __init__(self) -> None:
        self.path = str(HOME[0] / "queries.tsv")


def _queue_in(app: Flask, tmp_path: Path, threshold_bytes: int) -> None:
    """A queue of the test's own, and the job threshold at `threshold_bytes`."""
    app.config["NDCG_JOB_THRESHOLD_MB"] = threshold_bytes / (1024 * 1024)
    app.config["NDCG_JOBS_SQLITE"] = str(tmp_path / "jobs-queue.sqlite3")
    app.config["NDCG_JOBS_QUEUE"] = f"test-{uuid.uuid4().hex}"


def _run_queue(app: Flask, job_id: int) -> Job:
    """Start a worker until the job ends; the job as it ended."""
    worker = jobs.worker(app, threads=1)
    worker._set_signal_handlers = lambda: None  # pytest keeps its own SIGINT handler
    worker.start()
    try:
        return wait_for(app, job_id, ("done", "failed", "cancelled"))
    finally:
        worker.stop(graceful=True)


def _count(app: Flask, model: type) -> int:
    with app.app_context():
        return db.session.scalar(sa.select(sa.func.count()).select_from(model))


def test_the_cached_size_and_the_read_progress(app: Flask, datasets: tuple[str, str, str]) -> None:
    files = [HOME[0] / name for name in ("queries.tsv", "docs.tsv", "qrels")]
    reports: list[tuple[str, int, int, int]] = []
    with app.app_context():
        # The three files the tiny dataset reads, byte for byte; none for one not downloaded.
        assert interop.ir_dataset_size(datasets[0]) == sum(f.stat().st_size for f in files)
        assert interop.ir_dataset_size(datasets[1]) == 0
        # Files held where the walk does not look: the size cannot be told (a job, to be safe).
        if "ndcg-test/opaque" not in ir_datasets.registry:
            ir_datasets.registry.register("ndcg-test/opaque", Dataset(_Opaque()))
        assert interop.ir_dataset_size("ndcg-test/opaque") is None
        test_set = db.session.get_one(TestSet, make_test_set(app, "P"))
        interop.import_ir_dataset(
            test_set, datasets[0], progress=lambda *report: reports.append(report)
        )
    # Each kind's records read, counted as they are read: 2 queries, 3 docs, 3 qrels.
    assert [r[1:] for r in reports if r[0] == "read"] == [(2, 2, 2), (3, 3, 3), (3, 3, 3)]


def test_a_large_dataset_from_the_browser_is_a_job_with_progress(
    app: Flask,
    as_admin: FlaskClient,
    runner: FlaskCliRunner,
    datasets: tuple[str, str, str],
    tmp_path: Path,
) -> None:
    _queue_in(app, tmp_path, 10)  # the tiny dataset's 80 bytes are "large"
    set_id = make_test_set(app, "Big")
    response = as_admin.post(
        f"/test-sets/{set_id}/import/peer",
        data={"peer-fmt": "ir-datasets", "peer-dataset": datasets[0]},
    )
    job_id = job_id_of(response)
    assert _count(app, Query) == 0  # queued only: the worker reads the dataset
    job = _run_queue(app, job_id)
    assert job.state == "done", job.error
    assert job.kind == "import" and job.params["ir_datasets"] == datasets[0]
    assert job.result["lines"][0] == "queries: 2 created, 0 updated, 0 unchanged"
    assert job.rows > 0
    page = as_admin.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "Imported" in page and "chunks: 3 created, 0 updated" in page
    assert "Dataset: ir_datasets ndcg-test/tiny." in page
    # The CLI stays direct whatever the threshold: no job, the counts at once.
    runner.invoke(args=["testset", "create", "Cli"])
    result = runner.invoke(args=["testset", "import", "Cli", "--ir-datasets", datasets[0]])
    assert result.exit_code == 0 and "queries: 2 created" in result.stdout
    assert _count(app, Job) == 1


def test_the_api_answers_202_with_the_job_and_follows_it(
    app: Flask, admin_id: int, datasets: tuple[str, str, str], tmp_path: Path
) -> None:
    set_id = make_test_set(app, "Api")
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        db.session.remove()
    headers = {"Authorization": f"Bearer {token}"}
    client = app.test_client()
    _queue_in(app, tmp_path, 10**6)  # small: imported in the request, as before
    small = client.post(
        f"/api/testsets/{set_id}/import", data={"ir_datasets": datasets[1]}, headers=headers
    )
    assert small.status_code == 400 and "is not downloaded" in small.json["detail"]
    _queue_in(app, tmp_path, 10)
    queued = client.post(
        f"/api/testsets/{set_id}/import", data={"ir_datasets": datasets[0]}, headers=headers
    )
    assert queued.status_code == 202, queued.json
    job = queued.json["job"]
    assert job["state"] == "queued" and not job["finished"] and job["result"] is None
    assert job["url"].endswith(f"/api/jobs/{job['id']}")
    _run_queue(app, job["id"])
    ended = client.get(f"/api/jobs/{job['id']}", headers=headers)
    assert ended.status_code == 200
    assert ended.json["state"] == "done" and ended.json["finished"]
    assert (
        "judgments of source 'ir_datasets:ndcg-test/tiny': 3 created, 0 updated, 0 unchanged"
        in (ended.json["result"]["lines"])
    )
    assert _count(app, Query) == 2
    assert client.get("/api/jobs/999", headers=headers).status_code == 404


# Datasets with one bad record each: (queries.tsv, docs.tsv, qrels), and what the error says.
FAULTY = {
    "ndcg-test/twice": (
        "1\tred dress\n",
        "d1\ta\nd2\tb\nd1\tc\n",
        "1 0 d1 1\n",
        "ir_datasets:ndcg-test/twice: doc 'd1' (record 3 of its docs): docid 'd1' appears "
        "twice (first at record 1)",
    ),
    "ndcg-test/stray": (
        "1\tred dress\n2\tblue shoes\n",
        "d1\ta\nd2\tb\n",
        "1 0 d1 1\n2 0 d2 0\n9 0 d2 1\n",
        "ir_datasets:ndcg-test/stray: qrel of query '9' and doc 'd2' (record 3 of its qrels): "
        "unknown query '9': the dataset's qrels name 1 query that its own queries lack (and "
        "this test set does not have): '9'",
    ),
    # Seven qids of its qrels are in neither its queries nor the test set: the first five named.
    "ndcg-test/strays": (
        "1\tred dress\n",
        "d1\ta\n",
        "1 0 d1 1\n" + "".join(f"{q} 0 d1 1\n" for q in (9, 10, 11, 9, 12, 13, 14, 15)),
        "ir_datasets:ndcg-test/strays: qrel of query '9' and doc 'd1' (record 2 of its qrels): "
        "unknown query '9': the dataset's qrels name 7 queries that its own queries lack (and "
        "this test set does not have): '9', '10', '11', '12', '13' and 2 more",
    ),
    "ndcg-test/blank": (
        "1\tred dress\n2\t \n",
        "d1\ta\n",
        "1 0 d1 1\n",
        "ir_datasets:ndcg-test/blank: query '2' (record 2 of its queries): query 2 has empty text",
    ),
}


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Names of the FAULTY datasets, registered with their files in the cache."""
    for name, (queries, docs, qrels, _) in FAULTY.items():
        home = tmp_path_factory.mktemp(name.replace("/", "-"))
        (home / "queries.tsv").write_text(queries)
        (home / "docs.tsv").write_text(docs)
        (home / "qrels").write_text(qrels)

        def file(part: str, home: Path = home) -> Download:
            return Download([RequestsDownload(URL + part)], cache_path=str(home / part))

        if name not in ir_datasets.registry:
            ir_datasets.registry.register(
                name,
                Dataset(
                    TsvQueries(file("queries.tsv")),
                    TsvDocs(file("docs.tsv")),
                    TrecQrels(file("qrels"), {0: "not", 1: "some"}),
                ),
            )
    return list(FAULTY)


def test_a_bad_record_is_named_by_the_dataset_and_its_ids(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, admin_id: int, faulty: list[str]
) -> None:
    runner.invoke(args=["testset", "create", "A"])
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        set_id = db.session.scalar(sa.select(TestSet.id).where(TestSet.name == "A"))
    for name in faulty:
        said = FAULTY[name][3]
        result = runner.invoke(args=["testset", "import", "A", "--ir-datasets", name])
        assert result.exit_code == 1 and said in result.stderr, result.stderr
        # No place in the files written for the import: they are nowhere the user can look.
        assert " line " not in result.stderr and "tmp" not in result.stderr
        answer = client.post(
            f"/api/testsets/{set_id}/import",
            data={"ir_datasets": name},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 400 and said in answer.json["detail"], answer.json
        assert answer.json["file"] == f"ir_datasets:{name}" and answer.json["line"] is None
    assert _count(app, Query) == 0
