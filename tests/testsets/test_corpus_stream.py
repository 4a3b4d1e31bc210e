"""Streaming corpus imports (issue 30, item 5): all or nothing across blocks, repeated docids
found in the database, the full-text index built after the rows, bounded memory,
--only-referenced, and cancel."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.models import Chunk, TestSet, User
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services import testsets
from ndcg_labeler.services._progress import Cancelled
from ndcg_labeler.services.accounts import create_token
from ndcg_labeler.services.imports import ImportFile, import_files
from ndcg_labeler.services.imports import corpus as corpus_module
from tests.factory import AuthActions, make_test_set, make_user
from tests.testsets.helpers import mem


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 100 records, so that a few hundred lines span several blocks."""
    monkeypatch.setattr(corpus_module, "BLOCK", 100)


def _line(docid: str, text: str, title: str = "") -> str:
    return json.dumps({"_id": docid, "title": title, "text": text}) + "\n"


def _corpus(n: int, start: int = 1) -> str:
    return "".join(
        _line(f"d{i}", f"text of chunk {i} about walrus{i}") for i in range(start, n + 1)
    )


def _trigger_sql() -> str | None:
    """The FTS insert trigger's SQL on SQLite (None elsewhere or when it is missing)."""
    if db.session.connection().dialect.name != "sqlite":
        return None
    return db.session.scalar(
        sa.text("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'chunk_fts_ai'")
    )


def _chunk_count(ts: int) -> int:
    stmt = sa.select(sa.func.count()).select_from(Chunk).where(Chunk.test_set_id == ts)
    return int(db.session.scalar(stmt) or 0)


def _found(test_set: TestSet, search: str) -> list[str]:
    return [c.docid for c in testsets.chunks_page(test_set, 1, search=search).items]


def test_a_bad_line_in_a_late_block_leaves_nothing(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        trigger = _trigger_sql()
        test_set = db.session.get(TestSet, ts)
        import_files(test_set, corpus=mem("first.jsonl", _corpus(5)))
        bad = _corpus(330) + '{"_id": "d331", "text": 7}\n' + _corpus(400, 332)
        with pytest.raises(FormatError) as caught:
            import_files(test_set, corpus=mem("corpus.jsonl", bad))
        assert caught.value.line == 331 and caught.value.filename == "corpus.jsonl"
        # Blocks 1-3 had been written in the transaction: all rolled back.
        assert _chunk_count(ts) == 5
        assert _trigger_sql() == trigger  # the index trigger is back as it was
        assert _found(test_set, "walrus3") == ["d3"] and _found(test_set, "walrus300") == []


def test_a_docid_repeated_blocks_later_is_refused_with_both_lines(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        text = _corpus(250) + _line("d42", "again")
        with pytest.raises(FormatError, match=r"docid 'd42' appears twice \(first at line 42\)"):
            import_files(test_set, corpus=mem("corpus.jsonl", text))
        assert _chunk_count(ts) == 0
        text = _corpus(5) + _line("d3", "again")  # within one block too
        with pytest.raises(FormatError, match=r"corpus.jsonl:6: .*first at line 3"):
            import_files(test_set, corpus=mem("corpus.jsonl", text))


def test_the_index_built_after_the_rows_finds_them_and_later_chunks(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        report = import_files(test_set, corpus=mem("corpus.jsonl", _corpus(250)))
        assert report.chunks is not None and report.chunks.created == 250
        assert _found(test_set, "walrus117") == ["d117"]
        assert _found(test_set, "walrus25") == ["d25", "d250"]  # words as prefixes
        # The trigger works again for rows written later (here: an update and a new chunk).
        text = _corpus(250).replace("walrus7 ", "narwhal ").replace('walrus7"', 'narwhal"')
        report = import_files(test_set, corpus=mem("c.jsonl", text + _line("d251", "a narwhal")))
        assert report.chunks is not None
        assert (report.chunks.created, report.chunks.updated) == (1, 1)
        assert report.chunks.unchanged == 249
        assert _found(test_set, "narwhal") == ["d7", "d251"]
        assert "d7" not in _found(test_set, "walrus7") and "d70" in _found(test_set, "walrus7")


def test_cancel_while_streaming_the_corpus_leaves_nothing(app: Flask) -> None:
    ts = make_test_set(app)
    seen: list[int] = []

    def progress(phase: str, done: int, total: int, rows: int) -> None:
        if phase == "corpus":
            seen.append(rows)
            if rows >= 300:
                raise Cancelled("cancelled by a user")

    with app.app_context():
        trigger = _trigger_sql()
        test_set = db.session.get(TestSet, ts)
        with pytest.raises(Cancelled):
            import_files(test_set, corpus=mem("corpus.jsonl", _corpus(1000)), progress=progress)
        assert seen == [100, 200, 300] and _chunk_count(ts) == 0
        assert _trigger_sql() == trigger


def test_only_referenced_keeps_the_chunks_pools_qrels_and_runs_name(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        queries = mem("queries.csv", "qid,text\nq1,first\nq2,second\n")
        run = "q1 Q0 d200 1 9.0 r\nq2 Q0 d150 1 8.0 r\nq2 Q0 d999 2 7.0 r\n"
        import_files(test_set, queries=queries)
        run_service.upload_run(test_set, io.BytesIO(run.encode()), "r.trec", "r", None)
        report = import_files(
            test_set,
            corpus=mem("corpus.jsonl", _corpus(300)),
            pool=mem("pool.csv", "qid,docid\nq1,d2\nq2,d120\n"),
            qrels=mem("qrels.txt", "q1 0 d30 2\n"),
            only_referenced=True,
        )
        kept = db.session.scalars(
            sa.select(Chunk.docid).where(Chunk.test_set_id == ts, Chunk.text.is_not(None))
        ).all()
        assert sorted(kept) == ["d120", "d150", "d2", "d200", "d30"]
        assert report.chunks is not None and report.chunks.created == 5
        assert report.chunks_not_referenced == 295
        assert "chunks left out (no pool, qrels or run names them): 295" in report.lines()


def _traced_peak(app: Flask, file: Path) -> int:
    """The traced peak of importing `file` into a new test set (its chunks all created)."""
    ts = make_test_set(app, file.stem)
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        db.session.connection()  # connect before tracing: the pool's first connection is not ours
        tracemalloc.start()
        try:
            with open(file, "rb") as stream:
                report = import_files(test_set, corpus=ImportFile(stream, file.name))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert report.chunks is not None and report.chunks.created == _chunk_count(ts)
    return peak


def test_memory_does_not_grow_with_the_corpus(app: Flask, tmp_path: Path) -> None:
    """Three times the chunks, the same traced peak (the parser's 1 MiB read blocks and one block
    of records). The old path held every record, more memory than the file: the larger import
    would have peaked ~8 MB higher."""
    filler = "lorem ipsum dolor sit amet " * 16  # ~430 bytes of text a chunk
    sizes, peaks = [], []
    for n in (4_000, 12_000):
        file = tmp_path / f"corpus-{n}.jsonl"
        with open(file, "w") as out:
            for i in range(n):
                out.write(_line(f"doc-{i}", f"{filler}{i}", title=f"title {i}"))
        sizes.append(file.stat().st_size)
        peaks.append(_traced_peak(app, file))
    assert sizes[1] - sizes[0] > 3_500_000
    assert peaks[1] < 1.2 * peaks[0] + 500_000, (peaks, sizes)


def test_the_api_and_the_form_take_only_referenced(app: Flask, client) -> None:
    admin = make_user(app, "boss", "admin")
    ts = make_test_set(app, "api")
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        import_files(test_set, queries=mem("q.csv", "qid,text\nq1,one\n"))
        import_files(test_set, pool=mem("pool.csv", "qid,docid\nq1,d3\n"))
        token = create_token(db.session.get(User, admin))
    body = {"corpus": (io.BytesIO(_corpus(10).encode()), "c.jsonl"), "only_referenced": "true"}
    response = client.post(
        "/api/testsets/api/import",
        data=body,
        headers={"Authorization": f"Bearer {token}"},
        content_type="multipart/form-data",
    )
    assert response.status_code == 201, response.get_json()
    report = response.get_json()["report"]
    assert "chunks: 0 created, 1 updated, 0 unchanged" in report  # d3 had no text yet
    assert "chunks left out (no pool, qrels or run names them): 9" in report
    AuthActions(client).login("boss")
    form = {"corpus": (io.BytesIO(_corpus(12).encode()), "c.jsonl"), "only_referenced": "y"}
    page = client.post(f"/test-sets/{ts}/import", data=form, content_type="multipart/form-data")
    assert "chunks left out (no pool, qrels or run names them): 11" in page.get_data(as_text=True)
    with app.app_context():
        assert _chunk_count(ts) == 1


def test_cli_only_referenced(app: Flask, tmp_path: Path) -> None:
    ts = make_test_set(app, "cli")
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        import_files(test_set, queries=mem("q.csv", "qid,text\nq1,one\n"))
    corpus, pool = tmp_path / "corpus.jsonl", tmp_path / "pool.tsv"
    corpus.write_text(_corpus(20))
    pool.write_text("qid\tdocid\nq1\td4\nq1\td17\n")
    args = ["testset", "import", "cli", "--corpus", str(corpus), "--pool", str(pool)]
    result = app.test_cli_runner().invoke(args=[*args, "--only-referenced"])
    assert result.exit_code == 0, result.output
    assert "chunks: 2 created, 0 updated, 0 unchanged" in result.output
    assert "chunks left out (no pool, qrels or run names them): 18" in result.output


@pytest.mark.parametrize("value", ["yes", "YES", "on"])
def test_the_api_takes_only_referenced_as_every_yes_it_takes(
    app: Flask, client, value: str
) -> None:
    admin = make_user(app, "boss", "admin")
    ts = make_test_set(app, "api")
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        import_files(test_set, queries=mem("q.csv", "qid,text\nq1,one\n"))
        import_files(test_set, pool=mem("pool.csv", "qid,docid\nq1,d3\n"))
        token = create_token(db.session.get(User, admin))
    body = {"corpus": (io.BytesIO(_corpus(10).encode()), "c.jsonl"), "only_referenced": value}
    response = client.post(
        "/api/testsets/api/import", data=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 201, response.get_json()
    assert "chunks left out (no pool, qrels or run names them): 9" in response.json["report"]
    with app.app_context():
        assert _chunk_count(ts) == 1


@pytest.mark.parametrize("value", ["maybe", "2", "referenced"])
def test_the_api_refuses_an_only_referenced_that_is_no_yes_or_no(
    app: Flask, client, value: str
) -> None:
    admin = make_user(app, "boss", "admin")
    ts = make_test_set(app, "api")
    with app.app_context():
        test_set = db.session.get(TestSet, ts)
        import_files(test_set, queries=mem("q.csv", "qid,text\nq1,one\n"))
        token = create_token(db.session.get(User, admin))
    body = {"corpus": (io.BytesIO(_corpus(10).encode()), "c.jsonl"), "only_referenced": value}
    response = client.post(
        "/api/testsets/api/import", data=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 400
    assert response.json["detail"] == (
        f"'only_referenced' must be true or false (1, on, yes / 0, off, no), not '{value}'"
    )
    with app.app_context():
        assert _chunk_count(ts) == 0
