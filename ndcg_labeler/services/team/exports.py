"""Export every annotator's judgments (CSV, JSONL); the aggregated qrels are live.qrels_text.

One row per current judgment, people's and import sources' alike (an import source's name
starts with "import:"), sorted by qid, docid and annotator. Times are ISO 8601 in UTC. Rows are
streamed: a large test set never sits in memory as text.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import safe_value
from ndcg_labeler.models import Chunk, Judgment, Query, TestSet, User, iso_utc
from ndcg_labeler.services import ServiceError

EXPORT_FIELDS = (
    "qid",
    "docid",
    "annotator",
    "status",
    "grade",
    "note",
    "active_ms",
    "created_at",
    "updated_at",
)
EXPORT_FORMATS = ("csv", "jsonl")
_BATCH = 2000


def judgment_rows(test_set: TestSet) -> Iterator[dict[str, Any]]:
    """Every judgment of the test set as a dict with EXPORT_FIELDS, by qid, docid and annotator."""
    stmt = (
        sa.select(
            Query.qid,
            Chunk.docid,
            User.username,
            Judgment.status,
            Judgment.grade,
            Judgment.note,
            Judgment.active_ms,
            Judgment.created_at,
            Judgment.updated_at,
        )
        .join(Query, Query.id == Judgment.query_id)
        .join(Chunk, Chunk.id == Judgment.chunk_id)
        .join(User, User.id == Judgment.annotator_id)
        .where(Judgment.test_set_id == test_set.id)
        .order_by(Query.qid, Chunk.docid, User.username)
    )
    result = db.session.execute(stmt.execution_options(yield_per=_BATCH))
    for qid, docid, name, status, grade, note, active_ms, created, updated in result:
        yield {
            "qid": qid,
            "docid": docid,
            "annotator": name,
            "status": status,
            "grade": grade,
            "note": note,
            "active_ms": int(active_ms or 0),
            "created_at": iso_utc(created, "seconds"),
            "updated_at": iso_utc(updated, "seconds"),
        }


def judgment_csv_chunks(test_set: TestSet) -> Iterator[str]:
    """The judgments as CSV text (header first), a batch of lines at a time.

    Notes, qids, docids and user names come from people and imported files; text that starts
    like a formula gets a leading apostrophe so opening the file in a spreadsheet never runs
    it. JSONL keeps them verbatim.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(EXPORT_FIELDS)
    for i, row in enumerate(judgment_rows(test_set), start=1):
        writer.writerow([safe_value(row[name]) for name in EXPORT_FIELDS])
        if i % _BATCH == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def judgment_jsonl_chunks(test_set: TestSet) -> Iterator[str]:
    """The judgments as JSON Lines (grade null unless graded), a batch of lines at a time."""
    lines: list[str] = []
    for row in judgment_rows(test_set):
        lines.append(json.dumps(row, ensure_ascii=False) + "\n")
        if len(lines) >= _BATCH:
            yield "".join(lines)
            lines = []
    yield "".join(lines)


def judgment_chunks(test_set: TestSet, fmt: str) -> Iterator[str]:
    """The judgments in `fmt` (csv or jsonl); ServiceError for another format."""
    if fmt == "csv":
        return judgment_csv_chunks(test_set)
    if fmt == "jsonl":
        return judgment_jsonl_chunks(test_set)
    raise ServiceError(f"format must be one of {', '.join(EXPORT_FORMATS)}, not '{fmt}'")


def export_filename(test_set: TestSet, what: str, extension: str) -> str:
    """A download name such as `my-set-judgments.csv` (only safe ASCII characters)."""
    # ASCII only: servers write headers as latin-1, and "日本語" there broke the download.
    # Accents are dropped ("Ärger" -> "Arger"); other letters are left out.
    ascii_name = unicodedata.normalize("NFKD", test_set.name).encode("ascii", "ignore").decode()
    stem = "".join(c if c.isalnum() or c in "-_" else "-" for c in ascii_name).strip("-")
    return f"{stem or 'test-set'}-{what}.{extension}"
