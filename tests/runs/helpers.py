"""Helpers for the run and scoring tests: small test sets built through the import service."""

from __future__ import annotations

import io
from collections.abc import Iterable

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Query, Run, RunQuery, TestSet, User
from ndcg_labeler.services import labeling, testsets
from ndcg_labeler.services.testsets import ImportFile, import_files

# A small test set shared by the CLI and live-scoring tests: q1 ranks b (2), z (unjudged), a (3)
# against judged grades 3, 3, 2, 0; q2 ranks y (unjudged), x (1); q3 has no grade; q4 is
# missing from the run.
QUERIES = {"q1": "parental leave", "q2": "expenses", "q3": "dress code", "q4": "sick days"}
QRELS = [
    ("q1", "a", 3),
    ("q1", "b", 2),
    ("q1", "c", 0),
    ("q1", "d", 3),
    ("q2", "x", 1),
    ("q4", "m", 2),
]
RUN = (
    "q1 Q0 b 1 3.0 s\nq1 Q0 z 2 2.0 s\nq1 Q0 a 3 1.0 s\n"
    "q2 Q0 y 1 1.0 s\nq2 Q0 x 2 0.5 s\n"
    "q3 Q0 a 1 1.0 s\n"
)


def build_test_set(
    name: str,
    queries: dict[str, str],
    qrels: Iterable[tuple[str, str, int]] = (),
    corpus: dict[str, str] | None = None,
    scale: int = 3,
) -> TestSet:
    """Create a test set with queries, optional corpus and qrels (as an import source)."""
    test_set = testsets.create_test_set(name, scale)
    files: dict[str, ImportFile] = {
        "queries": ImportFile(
            io.BytesIO("".join(f"{q}\t{t}\n" for q, t in queries.items()).encode()),
            "queries.tsv",
        )
    }
    if corpus:
        lines = "docid,text\n" + "".join(f"{d},{t}\n" for d, t in corpus.items())
        files["corpus"] = ImportFile(io.BytesIO(lines.encode()), "corpus.csv")
    qrels = list(qrels)
    if qrels:
        text = "".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels)
        files["qrels"] = ImportFile(io.BytesIO(text.encode()), "labels.qrels")
    import_files(test_set, **files)
    return test_set


def grade(test_set: TestSet, qid: str, docid: str, value: int, username: str) -> None:
    """Save one annotator's grade through the judging service (creating the chunk if new)."""
    query = db.session.scalar(
        sa.select(Query).where(Query.test_set_id == test_set.id, Query.qid == qid)
    )
    chunk = db.session.scalar(
        sa.select(Chunk).where(Chunk.test_set_id == test_set.id, Chunk.docid == docid)
    )
    if chunk is None:
        chunk = Chunk(test_set_id=test_set.id, docid=docid, title=None, text=None)
        db.session.add(chunk)
        db.session.commit()
    user = db.session.scalar(sa.select(User).where(User.username == username))
    if user is None:
        user = User(username=username, role="annotator", active=True)
        db.session.add(user)
        db.session.commit()
    labeling.save_judgment(test_set, query, chunk, user, grade=value)


def stored(run: Run) -> dict[str, list[str]]:
    """qid -> ranked docids as stored in RunQuery rows."""
    rows = db.session.execute(
        sa.select(Query.qid, RunQuery.docids)
        .join(Query, Query.id == RunQuery.query_id)
        .where(RunQuery.run_id == run.id)
    ).all()
    return {qid: bytes(blob).decode().split("\n") for qid, blob in rows}


def counts() -> tuple[int, int]:
    """(runs, run_query rows) in the database."""
    return (
        db.session.scalar(sa.select(sa.func.count()).select_from(Run)),
        db.session.scalar(sa.select(sa.func.count()).select_from(RunQuery)),
    )
