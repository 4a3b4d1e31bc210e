"""The import service: every format, idempotency, all-or-nothing, missing chunks, bad grades."""

from __future__ import annotations

import gzip
import io

import pytest
import sqlalchemy as sa
from flask import Flask

from ndcg_labeler.extensions import db
from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.models import Chunk, Judgment, JudgmentEvent, Pair, Query, TestSet, User
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services.imports import ImportFile, import_files
from tests.factory import make_test_set
from tests.testsets.helpers import BEIR, counts, mem, path


def _import(test_set_id: int, **files: object):
    return import_files(db.session.get(TestSet, test_set_id), **files)  # type: ignore[arg-type]


def _beir() -> dict[str, ImportFile]:
    return {
        "queries": ImportFile.from_path(BEIR / "queries.jsonl"),
        "corpus": ImportFile.from_path(BEIR / "corpus.jsonl"),
        "pool": ImportFile.from_path(BEIR / "pool.tsv"),
        "qrels": ImportFile.from_path(BEIR / "qrels" / "test.tsv"),
    }


def _priorities(test_set_id: int) -> dict[tuple[str, str], int]:
    rows = db.session.execute(
        sa.select(Query.qid, Chunk.docid, Pair.priority)
        .join(Query, Query.id == Pair.query_id)
        .join(Chunk, Chunk.id == Pair.chunk_id)
        .where(Pair.test_set_id == test_set_id)
    )
    return {(q, d): p for q, d, p in rows}


def test_beir_set_imports_with_counts(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        report = _import(ts, **_beir())
        assert str(report.queries) == "3 created, 0 updated, 0 unchanged"
        assert str(report.chunks) == "12 created, 0 updated, 0 unchanged"
        # 12 pool pairs; the 4 judged pairs of the qrels are among them.
        assert str(report.pairs) == "12 created, 0 updated, 0 unchanged"
        assert str(report.judgments) == "4 created, 0 updated, 0 unchanged"
        assert report.chunks_without_text == 0
        assert counts(ts) == {
            "queries": 3,
            "chunks": 12,
            "pairs": 12,
            "judgments": 4,
            "events": 4,
            "labels_version": 1,
        }
        query = db.session.scalar(sa.select(Query).where(Query.qid == "q2"))
        assert query.text == "How do I connect to the VPN from home?"
        chunk = db.session.scalar(sa.select(Chunk).where(Chunk.docid == "d5"))
        assert chunk.title == "VPN set-up"
        assert chunk.text.startswith("Install the VPN client")
        # The judgments belong to an import source named after the file; it cannot log in.
        source = db.session.scalar(sa.select(User).where(User.username == "import:test.tsv"))
        assert source is not None and source.role == "import" and not source.is_active
        grades = dict(
            db.session.execute(
                sa.select(Chunk.docid, Judgment.grade)
                .join(Chunk, Chunk.id == Judgment.chunk_id)
                .where(Judgment.annotator_id == source.id)
            ).all()
        )
        assert grades == {"d1": 3, "d3": 1, "d5": 3, "d9": 2}
        event = db.session.scalar(sa.select(JudgmentEvent).limit(1))
        assert (event.old_grade, event.annotator_id, event.kind) == (None, source.id, "judgment")
        assert (event.new_status, event.new_grade, event.note) == (
            "graded",
            3,
            "imported from test.tsv",
        )
        # Rows written in bulk read back through the ORM like any other.
        judgment = db.session.scalar(sa.select(Judgment).limit(1))
        assert (judgment.status, judgment.note, judgment.active_ms) == ("graded", "", 0)
        assert judgment.created_at.year >= 2024 and judgment.updated_at == judgment.created_at
        pair = db.session.scalar(sa.select(Pair).order_by(Pair.id).limit(1))
        assert (pair.source, pair.priority) == ("pool.tsv", 1)
        assert pair.created_at.year >= 2024


def test_importing_the_same_files_twice_changes_nothing(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        _import(ts, **_beir())
        before = counts(ts)
        report = _import(ts, **_beir())
        assert str(report.queries) == "0 created, 0 updated, 3 unchanged"
        assert str(report.chunks) == "0 created, 0 updated, 12 unchanged"
        assert str(report.pairs) == "0 created, 0 updated, 12 unchanged"
        assert str(report.judgments) == "0 created, 0 updated, 4 unchanged"
        assert counts(ts) == before


def test_csv_queries_corpus_trec_run_and_trec_qrels(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        report = _import(
            ts,
            queries=path("queries.csv"),
            corpus=path("corpus.csv"),
            pool=path("run.trec"),
            qrels=path("qrels.trec"),
        )
        assert report.queries.created == 2 and report.chunks.created == 3
        # p9 (run) and p7 (qrels) are in no corpus: created without text.
        assert report.chunks_without_text == 2
        missing = db.session.scalars(
            sa.select(Chunk.docid).where(Chunk.text.is_(None)).order_by(Chunk.docid)
        ).all()
        assert missing == ["p7", "p9"]
        c1 = db.session.scalar(sa.select(Query).where(Query.qid == "c1"))
        assert c1.text == "Cancel an order, after payment"
        assert c1.narrative == "Only chunks that explain cancellation after payment are relevant."
        assert db.session.scalar(sa.select(Query.narrative).where(Query.qid == "c2")) is None
        assert db.session.scalar(sa.select(Chunk.title).where(Chunk.docid == "p3")) is None
        # Priority = rank in trec_eval order (score descending), not the file's rank column:
        # c1 scores p1 9.0, p3 2.5, p2 1.0. Pairs judged only in the qrels (c1 p3 is in the
        # run too; c2 p7 is not) come after, in qrels file order.
        prio = _priorities(ts)
        assert (prio["c1", "p1"], prio["c1", "p3"], prio["c1", "p2"]) == (1, 2, 3)
        assert (prio["c2", "p2"], prio["c2", "p9"]) == (1, 2)
        assert prio["c2", "p7"] == 4  # 4th line of qrels.trec
        assert report.pairs.created == 6


def test_tsv_topics(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        report = _import(ts, queries=path("topics.tsv"))
        assert report.queries.created == 2
        assert db.session.scalar(sa.select(Query.text).where(Query.qid == "t2")) == (
            "shipping to switzerland"
        )


def test_csv_pool_priority_is_file_order(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        _import(ts, queries=path("queries.csv"), pool=path("pool.csv"))
        assert _priorities(ts) == {("c2", "p3"): 1, ("c1", "p1"): 2, ("c2", "p2"): 3}
        # Nobody gave a corpus: all three chunks exist without text.
        assert counts(ts)["chunks"] == 3


def test_gzip_files_are_accepted(app: Flask) -> None:
    ts = make_test_set(app)
    data = gzip.compress((BEIR / "queries.jsonl").read_bytes())
    with app.app_context():
        report = _import(ts, queries=ImportFile(io.BytesIO(data), "queries.jsonl.gz"))
        assert report.queries.created == 3


def test_bad_line_anywhere_writes_nothing(app: Flask) -> None:
    ts = make_test_set(app)
    corpus = '{"_id": "a", "text": "fine"}\n{"_id": "b", "text": "fine"}\n{"_id": "c", "text": \n'
    with app.app_context():
        with pytest.raises(FormatError) as info:
            _import(ts, queries=path("queries.csv"), corpus=mem("corpus.jsonl", corpus))
        assert str(info.value).startswith("corpus.jsonl:3: invalid JSON")
        # The valid queries file of the same import was not written either.
        assert counts(ts) == dict.fromkeys(("queries", "chunks", "pairs", "judgments"), 0) | {
            "events": 0,
            "labels_version": 0,
        }


def test_failed_import_leaves_existing_data_unchanged(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        _import(ts, **_beir())
        before = counts(ts)
        with pytest.raises(FormatError) as info:
            _import(
                ts,
                corpus=mem("more.jsonl", '{"_id": "d99", "text": "new"}\n'),
                pool=mem("pool.tsv", "q1\td99\n"),
                qrels=mem("q.txt", "q1 0 d1 2\nq1 0 d2\n"),
            )
        assert str(info.value) == ("q.txt:2: expected 4 columns (qid iter docid grade), found 3")
        assert counts(ts) == before
        assert db.session.scalar(sa.select(Chunk).where(Chunk.docid == "d99")) is None


@pytest.mark.parametrize(("grade", "hint"), [("4", ""), ("-1", "negative grades are not accepted")])
def test_grade_outside_the_scale_is_rejected_with_its_line(
    app: Flask, grade: str, hint: str
) -> None:
    ts = make_test_set(app, scale=3)
    qrels = f"c1 0 p1 3\nc1 0 p2 0\n\nc2 0 p2 {grade}\n"
    with app.app_context():
        with pytest.raises(FormatError) as info:
            _import(ts, queries=path("queries.csv"), qrels=mem("grades.qrels", qrels))
        message = str(info.value)
        assert message.startswith(f"grades.qrels:4: grade {grade} for query c2, docid 'p2'")
        assert "outside this test set's scale 0–3" in message and hint in message
        assert counts(ts)["queries"] == 0


def test_grade_four_is_fine_on_a_0_to_4_scale(app: Flask) -> None:
    ts = make_test_set(app, scale=4)
    with app.app_context():
        report = _import(ts, queries=path("queries.csv"), qrels=mem("g.qrels", "c1 0 p1 4\n"))
        assert report.judgments.created == 1


def test_unknown_query_in_pool_names_the_line(app: Flask) -> None:
    ts = make_test_set(app)
    pool = "qid,docid\nc1,p1\nc1,p2\nq9,p1\nq10,p1\nq9,p2\n"
    with app.app_context():
        with pytest.raises(FormatError) as info:
            _import(ts, queries=path("queries.csv"), pool=mem("pool.csv", pool))
        assert str(info.value) == (
            "pool.csv:4: unknown query 'q9': this test set has no such qid (import its queries "
            "first, or in the same import)"
        )
        assert counts(ts)["queries"] == 0


def test_unknown_query_in_trec_run_and_beir_qrels(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        _import(ts, queries=path("queries.csv"))
        with pytest.raises(FormatError, match=r"^run\.txt:2: unknown query 'zz'"):
            _import(ts, pool=mem("run.txt", "c1 Q0 p1 1 3 x\nzz Q0 p1 1 3 x\n"))
        qrels = "query-id\tcorpus-id\tscore\nc1\tp1\t1\nnope\tp1\t1\n"
        with pytest.raises(FormatError, match=r"^test\.tsv:3: unknown query 'nope'"):
            _import(ts, qrels=mem("test.tsv", qrels))
        assert counts(ts)["pairs"] == 0


def test_reimport_reports_updates_and_fills_missing_text(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        _import(ts, queries=path("queries.csv"), pool=path("pool.csv"))
        corpus = "docid,text\np1,Orders can be cancelled.\np3,We open at nine.\n"
        report = _import(ts, corpus=mem("c.csv", corpus))
        assert str(report.chunks) == "0 created, 2 updated, 0 unchanged"
        assert db.session.scalar(sa.select(Chunk.text).where(Chunk.docid == "p3")) == (
            "We open at nine."
        )
        assert db.session.scalar(sa.select(Chunk.text).where(Chunk.docid == "p2")) is None
        # A second pool with a better rank for an existing pair lowers its priority only.
        report = _import(ts, pool=mem("p2.csv", "c2,p2\nc2,p3\n"))
        assert str(report.pairs) == "0 created, 1 updated, 1 unchanged"
        assert _priorities(ts)["c2", "p2"] == 1


def test_changed_grade_updates_the_judgment_and_appends_history(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        _import(ts, queries=path("queries.csv"), qrels=mem("j.qrels", "c1 0 p1 3\nc2 0 p2 1\n"))
        report = _import(ts, qrels=mem("j.qrels", "c1 0 p1 2\nc2 0 p2 1\n"))
        assert str(report.judgments) == "0 created, 1 updated, 1 unchanged"
        events = db.session.scalars(sa.select(JudgmentEvent).order_by(JudgmentEvent.id)).all()
        assert [(e.old_grade, e.new_grade) for e in events] == [(None, 3), (None, 1), (3, 2)]
        assert counts(ts)["labels_version"] == 2
        # Another source name keeps its own judgments beside the first ones.
        report = _import(ts, qrels=mem("j.qrels", "c1 0 p1 0\n"), source="second opinion")
        assert report.judgments.created == 1 and report.source == "second opinion"
        assert counts(ts)["judgments"] == 3


def test_nothing_to_import_is_refused(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context(), pytest.raises(ServiceError, match="at least one file"):
        _import(ts)


def test_large_files_are_batched(app: Flask) -> None:
    """More rows than one executemany batch (5,000) in every table."""
    ts = make_test_set(app)
    queries = "".join(f'{{"_id": "q{i}", "text": "query {i}"}}\n' for i in range(3))
    corpus = "".join(f'{{"_id": "d{i}", "text": "chunk {i}"}}\n' for i in range(6000))
    pool = "".join(f"q{i % 3}\td{i}\n" for i in range(12000 // 2)) + "".join(
        f"q{(i + 1) % 3}\td{i}\n" for i in range(6000)
    )
    qrels = "".join(f"q{i % 3} 0 d{i} {i % 4}\n" for i in range(5500))
    with app.app_context():
        report = _import(
            ts,
            queries=mem("q.jsonl", queries),
            corpus=mem("c.jsonl", corpus),
            pool=mem("p.tsv", pool),
            qrels=mem("r.qrels", qrels),
        )
        assert (report.chunks.created, report.pairs.created, report.judgments.created) == (
            6000,
            12000,
            5500,
        )
        assert counts(ts)["events"] == 5500


def test_too_long_docid_is_refused(app: Flask) -> None:
    ts = make_test_set(app)
    with app.app_context():
        with pytest.raises(FormatError, match=r"^pool\.csv:1: docid 'xxx.*' is longer than 300"):
            _import(ts, queries=path("queries.csv"), pool=mem("pool.csv", f"c1,{'x' * 301}\n"))
        assert counts(ts)["queries"] == 0
