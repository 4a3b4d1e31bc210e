"""A test set's judgments and queries, and a run, in Quepid's and SRW's shapes.

Grades are the ones scoring uses (the aggregation policy, adjudications): the same as the
TREC qrels export, each query named by its text, so queries sharing a text are written as one
(see judgment_rows). Queries with no grade are listed too (Quepid and SRW keep a query without
ratings), in the set's natural qid order.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import (
    write_quepid_judgments,
    write_quepid_snapshot,
    write_srw_judgments,
    write_srw_query_set,
)
from ndcg_labeler.models import Query, Run, TestSet
from ndcg_labeler.services import ServiceError, live, runs

EXPORT_FORMATS = ("quepid", "srw-judgments", "srw-queries")
"""Exports of a test set; a run exports as a Quepid snapshot (quepid-snapshot)."""

GRADED_EXPORTS = ("quepid", "srw-judgments")
"""The exports that hold grades: on a blind set, for those who may see grades only. A query set
(srw-queries) holds texts alone: whoever may see the set's queries may have it."""

_SRW_NAME = 50  # SRW's limits on a name and a description
_SRW_DESCRIPTION = 250


def _queries(test_set: TestSet) -> list[tuple[str, str]]:
    """(qid, text) of every query, in natural qid order."""
    rows = db.session.execute(
        sa.select(Query.qid, Query.text)
        .where(Query.test_set_id == test_set.id)
        .order_by(Query.sort_key, Query.qid)
    )
    return [(qid, " ".join(text.split())) for qid, text in rows]


def judgment_rows(
    test_set: TestSet, policy: str | None = None
) -> list[tuple[str, str | None, int | None]]:
    """(query text, docid, grade) per graded pair; (text, None, None) for a text without any.

    Peers name a query by its text (Quepid finds or creates a case's query by it), so queries
    that share a text are one query there: each (text, docid) is written once, and a text alone
    only when none of its queries has a grade. Two of them grading one docid differently would
    be one query rated twice: refused (ServiceError), naming the first such pair.
    """
    grades: dict[str, list[tuple[str, int]]] = {}
    for line in live.qrels_text(test_set, policy).splitlines():
        qid, _, docid, grade = line.split()
        grades.setdefault(qid, []).append((docid, int(grade)))
    by_text: dict[str, dict[str, tuple[int, str]]] = {}  # text -> docid -> (grade, qid)
    clashes: list[str] = []
    for qid, text in _queries(test_set):
        docs = by_text.setdefault(text, {})
        for docid, grade in grades.get(qid, []):
            first, first_qid = docs.setdefault(docid, (grade, qid))
            if first != grade:
                clashes.append(
                    f"queries {first_qid} and {qid} share the text '{text[:60]}' and grade "
                    f"docid '{docid}' differently ({first} and {grade})"
                )
    if clashes:
        more = f" (and {len(clashes) - 1} more such docids)" if len(clashes) > 1 else ""
        raise ServiceError(
            f"{clashes[0]}{more}: Quepid and SRW name a query by its text, so these would be "
            "one query rated twice; give one of them another text first (import the queries "
            "again, its qid with a new text)"
        )
    rows: list[tuple[str, str | None, int | None]] = []
    for text, docs in by_text.items():
        if not docs:
            rows.append((text, None, None))
        rows.extend((text, docid, grade) for docid, (grade, _) in docs.items())
    return rows


def export_test_set(test_set: TestSet, fmt: str, policy: str | None = None) -> tuple[str, str, str]:
    """(body, file name, mimetype) of the test set in a peer's shape (fmt in EXPORT_FORMATS)."""
    name = test_set.name[:_SRW_NAME]
    description = f"Exported from ndcg-labeler test set '{test_set.name}'"[:_SRW_DESCRIPTION]
    if fmt == "quepid":
        body = write_quepid_judgments(judgment_rows(test_set, policy))
        return body, f"test-set-{test_set.id}-quepid-judgments.csv", "text/csv"
    if fmt == "srw-judgments":
        body = write_srw_judgments(name, description, judgment_rows(test_set, policy))
        return body, f"test-set-{test_set.id}-srw-judgments.json", "application/json"
    if fmt == "srw-queries":
        body = write_srw_query_set(
            name, description, dict.fromkeys(t for _, t in _queries(test_set))
        )
        return body, f"test-set-{test_set.id}-srw-query-set.json", "application/json"
    raise ServiceError(f"the export format must be one of {', '.join(EXPORT_FORMATS)}, not '{fmt}'")


def export_run_snapshot(run: Run) -> tuple[str, str, str]:
    """(body, file name, mimetype) of a run as a Quepid snapshot CSV, positions from 1.

    Quepid groups a snapshot's rows by query text: queries sharing a text are written once
    when the run ranks them alike, and refused (ServiceError) when it ranks them differently.
    """
    lists = runs.ranked_lists(run)
    ranked_by: dict[str, tuple[str, list[str]]] = {}  # text -> (first qid, its docids)
    rows = []
    for qid, text in _queries(run.test_set):  # the set's query order; positions from 1
        docids = [docid for docid, _ in lists.get(qid, [])]
        if not docids:
            continue
        first = ranked_by.setdefault(text, (qid, docids))
        if first[0] != qid:
            if first[1] != docids:
                raise ServiceError(
                    f"queries {first[0]} and {qid} share the text '{text[:60]}' and run "
                    f"{run.name} ranks them differently: a Quepid snapshot names a query by "
                    "its text, so it cannot hold both; give one of them another text first"
                )
            continue
        rows.extend((text, docid, position) for position, docid in enumerate(docids, 1))
    stamp = (run.uploaded_at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = write_quepid_snapshot(run.name, stamp, str(run.test_set_id), rows)
    return body, f"run-{run.id}-quepid-snapshot.csv", "text/csv"
