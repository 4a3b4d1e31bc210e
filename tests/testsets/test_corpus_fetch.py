"""--only-referenced fetches the rest later (issue 30, item 5): a run naming a chunk the import
left out fetches it from the remembered corpus file, or says which docids are missing when the
file is gone, has changed or was an upload, and asks for it (CLI, API, browser, job)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, CorpusSource, Run, TestSet, User
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services import testsets
from ndcg_labeler.services._progress import Cancelled
from ndcg_labeler.services.accounts import create_token
from ndcg_labeler.services.imports import sources
from ndcg_labeler.services.jobs.runner import run_job
from tests.factory import AuthActions, grant, make_test_set, make_user, trec

# q1 ranks d1, d7, zz and q2 d2, d15 (trec() scores them in this order). The import keeps d1 and
# d2 (the pool's); d7 and d15 are in the corpus file only; zz is in no corpus.
RUN = trec({"q1": ["d1", "d7", "zz"], "q2": ["d2", "d15"]})
ASK = "import the corpus again: flask testset import fl --corpus FILE --only-referenced"


def _corpus(n: int) -> str:
    return "".join(
        json.dumps({"_id": f"d{i}", "title": "", "text": f"text of chunk {i} about walrus{i}"})
        + "\n"
        for i in range(1, n + 1)
    )


def _import(app: Flask, tmp_path: Path, *more: str) -> Path:
    """Test set `fl` from the CLI: 2 queries, a pool naming d1 and d2, and a 20-chunk corpus
    imported with --only-referenced; returns the corpus file."""
    make_test_set(app, "fl")
    corpus, queries, pool = tmp_path / "corpus.jsonl", tmp_path / "q.tsv", tmp_path / "pool.csv"
    corpus.write_text(_corpus(20))
    queries.write_text("q1\tfirst\nq2\tsecond\n")
    pool.write_text("qid,docid\nq1,d1\nq2,d2\n")
    args = ["testset", "import", "fl", "--queries", str(queries), "--corpus", str(corpus)]
    result = app.test_cli_runner().invoke(
        args=[*args, "--pool", str(pool), "--only-referenced", *more]
    )
    assert result.exit_code == 0, result.output
    assert "chunks left out (no pool, qrels or run names them): 18" in result.output
    remembered = f"corpus remembered: the 18 chunks left out are fetched from {corpus} when"
    assert remembered in result.output
    return corpus


def _texts(app: Flask) -> dict[str, str | None]:
    with app.app_context():
        rows = db.session.execute(sa.select(Chunk.docid, Chunk.text)).all()
        return dict(rows)


def _left_out(app: Flask) -> list[int]:
    with app.app_context():
        return list(db.session.scalars(sa.select(CorpusSource.left_out)))


def _report(app: Flask, name: str) -> dict:
    with app.app_context():
        return dict(db.session.scalars(sa.select(Run.report).where(Run.name == name)).one())


def _api_upload(app: Flask, client: FlaskClient, name: str, content: bytes) -> dict:
    with app.app_context():
        ts = testsets.require_by_name("fl").id
        token = create_token(db.session.get(User, make_user(app, f"api-{name}", "admin")))
    data = {"file": (io.BytesIO(content), f"{name}.trec"), "name": name}
    response = client.post(
        f"/api/testsets/{ts}/runs", data=data, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()["report"]


def test_a_run_naming_left_out_chunks_fetches_them_from_the_file(
    app: Flask, client: FlaskClient, tmp_path: Path
) -> None:
    _import(app, tmp_path)
    assert set(_texts(app)) == {"d1", "d2"} and _left_out(app) == [18]
    run = tmp_path / "r1.trec"
    run.write_bytes(RUN)
    result = app.test_cli_runner().invoke(args=["run", "upload", "fl", str(run)])
    assert result.exit_code == 0, result.output
    assert "2 chunks fetched from corpus.jsonl." in result.output
    assert "1 docid (1 ranked entry) is not in the test set's corpus" in result.output
    texts = _texts(app)
    assert texts["d7"] == "text of chunk 7 about walrus7" and texts["d15"].endswith("walrus15")
    assert "zz" not in texts and len(texts) == 4 and _left_out(app) == [16]
    report = _report(app, "r1")
    assert report["docids_not_in_corpus"]["examples"] == ["zz"]
    [fetch] = report["corpus_fetch"]
    assert (fetch["status"], fetch["fetched"], fetch["path"]) == (
        "fetched",
        2,
        str(tmp_path / "corpus.jsonl"),
    )
    with app.app_context():  # indexed for chunk search like imported chunks
        test_set = testsets.require_by_name("fl")
        found = testsets.chunks_page(test_set, 1, search="walrus15").items
        assert [c.docid for c in found] == ["d15"]
    # Through the API: d7 is there now, only d9 is fetched.
    again = _api_upload(app, client, "r2", trec({"q1": ["d7", "d9"]}))
    assert [(f["status"], f["fetched"]) for f in again["corpus_fetch"]] == [("fetched", 1)]
    assert again["corpus_fetch"][0]["message"] == "1 chunk fetched from corpus.jsonl"
    assert again["docids_not_in_corpus"]["count"] == 0 and _left_out(app) == [15]


def test_a_removed_file_is_reported_with_the_missing_docids(
    app: Flask, as_admin: FlaskClient, tmp_path: Path
) -> None:
    corpus = _import(app, tmp_path)
    corpus.unlink()
    report = _api_upload(app, as_admin, "r1", RUN)
    assert report["docids_not_in_corpus"]["count"] == 3
    [fetch] = report["corpus_fetch"]
    assert (fetch["status"], fetch["fetched"]) == ("gone", 0)
    assert fetch["message"] == (
        f"corpus.jsonl is gone (no file at {corpus}): nothing fetched from it; 3 docids the run "
        f"names are still missing (e.g. d7, zz, d15); {ASK}"
    )
    assert set(_texts(app)) == {"d1", "d2"} and _left_out(app) == [18]
    with app.app_context():
        ts, run_id = db.session.execute(sa.select(Run.test_set_id, Run.id)).one()
    page = as_admin.get(f"/test-sets/{ts}/runs/{run_id}").get_data(as_text=True)
    assert 'data-corpus-fetch="gone"' in page and "--corpus FILE --only-referenced" in page
    # A member who may view the run but not import a corpus: no server path or command.
    grant(app, ts, make_user(app, "member"))
    member = app.test_client()
    AuthActions(member).login("member")
    page = member.get(f"/test-sets/{ts}/runs/{run_id}").get_data(as_text=True)
    assert str(tmp_path) not in page and "--corpus" not in page
    assert (
        "corpus.jsonl is no longer where it was imported from: nothing fetched from it; 3 docids "
        "the run names are still missing (e.g. d7, zz, d15); an admin can import the corpus "
        "again." in page
    )
    # Imported again from its new place, as asked: the run's docids are kept, the rest is
    # remembered there, and the record of the file that is gone is forgotten.
    moved = tmp_path / "moved" / "corpus.jsonl"
    moved.parent.mkdir()
    moved.write_text(_corpus(20))
    args = ["testset", "import", "fl", "--corpus", str(moved), "--only-referenced"]
    result = app.test_cli_runner().invoke(args=args)
    assert f"the 16 chunks left out are fetched from {moved}" in result.output, result.output
    assert _texts(app)["d7"] == "text of chunk 7 about walrus7" and _left_out(app) == [16]


def test_a_changed_file_is_not_read_and_is_reported(
    app: Flask, as_admin: FlaskClient, tmp_path: Path
) -> None:
    corpus = _import(app, tmp_path)
    # The same size, another sha256: only the digest can tell.
    corpus.write_text(_corpus(20).replace("walrus7 ", "narwhl7 ").replace('walrus7"', 'narwhl7"'))
    assert corpus.stat().st_size == len(_corpus(20))
    with app.app_context():
        ts = testsets.require_by_name("fl").id
    form = {"file": (io.BytesIO(RUN), "r1.trec"), "name": "r1"}
    posted = as_admin.post(
        f"/test-sets/{ts}/runs/upload", data=form, content_type="multipart/form-data"
    )
    assert posted.status_code == 302
    page = as_admin.get(posted.headers["Location"]).get_data(as_text=True)
    assert f"corpus.jsonl has changed since it was imported ({corpus}): nothing fetched" in page
    assert f"flask testset import fl --corpus {corpus} --only-referenced" in page
    assert set(_texts(app)) == {"d1", "d2"}
    # Imported again as asked: the run's docids are referenced now, and the file remembered anew.
    args = ["testset", "import", "fl", "--corpus", str(corpus), "--only-referenced"]
    result = app.test_cli_runner().invoke(args=args)
    assert "corpus remembered: the 16 chunks left out" in result.output, result.output
    assert _texts(app)["d7"] == "text of chunk 7 about narwhl7" and _left_out(app) == [16]
    # Imported whole, nothing is left to fetch: the file is forgotten.
    result = app.test_cli_runner().invoke(args=args[:-1])
    assert result.exit_code == 0 and _left_out(app) == []


def test_an_uploaded_corpus_is_not_kept_and_a_job_upload_says_so(
    app: Flask, as_admin: FlaskClient
) -> None:
    ts = make_test_set(app, "fl")
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        files = {
            "queries": (io.BytesIO(b"q1\tfirst\nq2\tsecond\n"), "q.tsv"),
            "pool": (io.BytesIO(b"qid,docid\nq1,d1\nq2,d2\n"), "pool.csv"),
            "corpus": (io.BytesIO(_corpus(20).encode()), "corpus.jsonl"),
        }
        assert test_set is not None
    page = as_admin.post(
        f"/test-sets/{ts}/import",
        data={**files, "only_referenced": "y"},
        content_type="multipart/form-data",
    ).get_data(as_text=True)
    assert "corpus not kept: an uploaded file is deleted after the import" in page
    app.config["NDCG_JOB_THRESHOLD_MB"] = 1 / (1 << 20)  # every run goes to the job worker
    form = {"file": (io.BytesIO(RUN), "r1.trec"), "name": "r1"}
    posted = as_admin.post(
        f"/test-sets/{ts}/runs/upload", data=form, content_type="multipart/form-data"
    )
    assert posted.headers["Location"].startswith("/jobs/")
    with app.app_context():
        run_job(int(posted.headers["Location"].rsplit("/", 1)[1]))
    page = as_admin.get(posted.headers["Location"]).get_data(as_text=True)
    assert (
        "corpus.jsonl was uploaded, not read from a path, so it was not kept: nothing fetched "
        f"from it; 3 docids the run names are still missing (e.g. d7, zz, d15); {ASK}"
    ) in page


def test_a_file_changed_while_it_is_imported_is_not_remembered(app: Flask, tmp_path: Path) -> None:
    from ndcg_labeler.services.imports import ImportFile, import_files

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(_corpus(20))
    ts = make_test_set(app, "fl")

    def progress(phase: str, done: int, total: int, rows: int) -> None:
        if phase == "corpus" and rows and corpus.stat().st_size == len(_corpus(20)):
            with corpus.open("a") as more:  # another process writes to it meanwhile
                more.write(_corpus(21)[len(_corpus(20)) :])

    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        queries = ImportFile(io.BytesIO(b"q1\tfirst\n"), "q.tsv")
        pool = ImportFile(io.BytesIO(b"qid,docid\nq1,d1\n"), "pool.csv")
        with corpus.open("rb") as stream:
            report = import_files(
                test_set,
                queries=queries,
                pool=pool,
                corpus=ImportFile(stream, str(corpus), str(corpus)),
                progress=progress,
                only_referenced=True,
            )
        assert any(
            line.startswith(f"corpus not remembered: {corpus} changed") for line in report.lines()
        )
    report_of_run = _cli_upload(app, tmp_path, trec({"q1": ["d1", "d7"]}))
    assert "corpus.jsonl has changed since it was imported" in report_of_run
    assert set(_texts(app)) == {"d1"}


def _cli_upload(app: Flask, tmp_path: Path, content: bytes) -> str:
    run = tmp_path / "r.trec"
    run.write_bytes(content)
    result = app.test_cli_runner().invoke(args=["run", "upload", "fl", str(run)])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_fetch_reports_hashing_and_scanning_and_honours_cancel(
    app: Flask, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashing and scanning a 6 GB file take about a minute: both used to report nothing (a
    few wanted ids make no block of chunks until the end) and so could not be cancelled."""
    make_test_set(app, "fl")
    corpus, queries, pool = tmp_path / "corpus.jsonl", tmp_path / "q.tsv", tmp_path / "pool.csv"
    padding = "".join(
        json.dumps({"_id": f"p{i}", "title": "", "text": "padding " * 128}) + "\n"
        for i in range(9000)
    )
    corpus.write_text(_corpus(20) + padding)  # ~9 MB: the scan reports every 4 MiB
    queries.write_text("q1\tfirst\nq2\tsecond\n")
    pool.write_text("qid,docid\nq1,d1\n")
    args = ["testset", "import", "fl", "--queries", str(queries), "--corpus", str(corpus)]
    result = app.test_cli_runner().invoke(args=[*args, "--pool", str(pool), "--only-referenced"])
    assert result.exit_code == 0, result.output
    monkeypatch.setattr(sources, "REPORT_BYTES", 1 << 20)
    size = corpus.stat().st_size
    calls: list[tuple[str, int, int]] = []

    def watch(phase: str, done: int, total: int, rows: int) -> None:
        calls.append((phase, done, total))

    with app.app_context():
        test_set = testsets.require_by_name("fl")
        run_service.upload_run(test_set, io.BytesIO(RUN), "r1.trec", "r1", None, progress=watch)
        hashed = [done for phase, done, total in calls if phase == "verify" and total == size]
        scanned = [done for phase, done, total in calls if phase == "refetch" and 0 < done < total]
        assert len(hashed) >= 8 and hashed == sorted(hashed), calls
        assert len(scanned) >= 2 and scanned == sorted(scanned), calls
        for stop in ("verify", "refetch"):

            def cancel(phase: str, done: int, total: int, rows: int, stop: str = stop) -> None:
                if phase == stop and 0 < done < total:
                    raise Cancelled("cancelled by a user")

            name = f"cancelled-{stop}"
            with pytest.raises(Cancelled):
                run = io.BytesIO(trec({"q1": ["d3"]}))
                run_service.upload_run(test_set, run, "c.trec", name, None, progress=cancel)
            db.session.rollback()
            assert db.session.scalar(sa.select(Run.id).where(Run.name == name)) is None
        assert "d3" not in _texts(app)
