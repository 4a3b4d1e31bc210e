"""The grades scoring uses: every graded judgment of a pair combined by an aggregation policy.

- ``scoring_qrels(test_set, policy=None) -> {qid: {docid: grade}}`` for a whole test set;
- ``query_grades(test_set_id, query_id, policy) -> {docid: grade}`` for live re-scoring of one
  query (statements built once: it is the hot path after every grade).

Rules: only `graded` judgments count (can't-tell and skips never do); people's and import
sources' grades are combined with ``scoring.aggregate.resolve`` under the test set's aggregation
policy unless another is given; an Adjudication's grade overrides any policy. A pair nobody
graded is absent (unjudged), a pair graded 0 is present with 0 (judged non-relevant).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats.records import QrelRecord
from ndcg_labeler.formats.writers import write_trec_qrels
from ndcg_labeler.models import Adjudication, Chunk, Judgment, Query, TestSet
from ndcg_labeler.scoring.aggregate import POLICIES, resolve
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services._db import select_rows

Qrels = dict[str, dict[str, int]]


def choose_policy(test_set_policy: str, policy: str | None) -> str:
    """The policy to use (the test set's unless one is given); ServiceError when unknown."""
    chosen = policy or test_set_policy
    if chosen not in POLICIES:
        raise ServiceError(f"unknown aggregation policy '{chosen}'; choose one of {POLICIES}")
    return chosen


def combine(
    rows: Iterable[Sequence[Any]],
    adjudicated: Iterable[Sequence[Any]],
    policy: str,
) -> Qrels:
    """Group (qid, docid, grade) rows per pair and resolve each pair to one grade."""
    qrels: Qrels = {}
    # Most pairs have one grade: keep it in place and collect only the pairs with several.
    several: dict[tuple[str, str], list[int]] = {}
    for qid, docid, grade in rows:
        docs = qrels.get(qid)
        if docs is None:
            docs = qrels[qid] = {}
        if docid in docs:
            key = (qid, docid)
            grades = several.get(key)
            if grades is None:
                several[key] = [docs[docid], grade]
            else:
                grades.append(grade)
        else:
            docs[docid] = grade
    # Every policy is order-independent, so pairs with the same multiset of grades share one
    # resolve() call: many pairs, a handful of distinct grade combinations.
    cache: dict[tuple[int, ...], int | None] = {}
    for (qid, docid), grades in several.items():
        combo = tuple(sorted(grades))
        if combo not in cache:
            cache[combo] = resolve(combo, policy)
        resolved = cache[combo]
        if resolved is not None:
            qrels[qid][docid] = resolved
    for qid, docid, adjudicated_grade in adjudicated:
        final = resolve([], policy, adjudicated=adjudicated_grade)
        if final is not None:
            qrels.setdefault(qid, {})[docid] = final
    return qrels


def graded_rows(test_set_id: int, query_id: int | None) -> sa.Select[tuple[str, str, int]]:
    """(qid, docid, grade) of every graded judgment of the test set, or of one query."""
    stmt = (
        sa.select(Query.qid, Chunk.docid, Judgment.grade)
        .join(Query, Query.id == Judgment.query_id)
        .join(Chunk, Chunk.id == Judgment.chunk_id)
        .where(Judgment.status == "graded")
    )
    if query_id is None:
        return stmt.where(Judgment.test_set_id == test_set_id)
    # By query id alone (plus the query's own test set): the (query, chunk, annotator) key
    # serves it, where a test_set_id filter would tempt SQLite into scanning the whole set.
    return stmt.where(Judgment.query_id == query_id, Query.test_set_id == test_set_id)


def adjudicated_rows(test_set_id: int, query_id: int | None) -> sa.Select[tuple[str, str, int]]:
    """(qid, docid, grade) of every adjudicated pair of the test set, or of one query."""
    stmt = (
        sa.select(Query.qid, Chunk.docid, Adjudication.grade)
        .join(Query, Query.id == Adjudication.query_id)
        .join(Chunk, Chunk.id == Adjudication.chunk_id)
    )
    if query_id is None:
        return stmt.where(Adjudication.test_set_id == test_set_id)
    return stmt.where(Adjudication.query_id == query_id, Query.test_set_id == test_set_id)


def scoring_qrels(test_set: TestSet, policy: str | None = None) -> Qrels:
    """{qid: {docid: grade}} of every pair with a grade, aggregated under `policy`."""
    chosen = choose_policy(test_set.aggregation, policy)
    rows = select_rows(graded_rows(test_set.id, None))
    adjudicated = select_rows(adjudicated_rows(test_set.id, None))
    return combine(rows, adjudicated, chosen)


def qrels_text(test_set: TestSet, policy: str | None = None) -> str:
    """The grades scoring uses (policy, adjudications) as TREC qrels, sorted by qid, docid."""
    out = io.StringIO()
    write_trec_qrels(sorted_records(scoring_qrels(test_set, policy)), out)
    return out.getvalue()


# The live hot path's statements, built once: building them per call costs more than running them.
_ONE_QUERY_GRADED = graded_rows(sa.bindparam("test_set_id"), sa.bindparam("query_id"))  # type: ignore[arg-type]
_ONE_QUERY_ADJUDICATED = adjudicated_rows(sa.bindparam("test_set_id"), sa.bindparam("query_id"))  # type: ignore[arg-type]


def query_grades(test_set_id: int, query_id: int, policy: str | None = None) -> dict[str, int]:
    """{docid: grade} of one query (for re-scoring it after a grade changes).

    Same rules as scoring_qrels, under `policy` or else the test set's own. The statements are
    compiled once and cached by the session, so the live path (which passes the policy) reads a
    query in about a millisecond. Few rows, so SQLAlchemy rows are cheap here.
    """
    if policy is None:
        policy = db.session.scalar(sa.select(TestSet.aggregation).where(TestSet.id == test_set_id))
        if policy is None:
            raise ServiceError(f"unknown test set id {test_set_id}")
    params = {"test_set_id": test_set_id, "query_id": query_id}
    rows = db.session.execute(_ONE_QUERY_GRADED, params).all()
    adjudicated = db.session.execute(_ONE_QUERY_ADJUDICATED, params).all()
    qrels = combine(rows, adjudicated, choose_policy(policy, None))
    return next(iter(qrels.values()), {})


def sorted_records(qrels: Qrels) -> Iterator[QrelRecord]:
    """The qrels as records sorted by qid then docid (code point = UTF-8 byte order)."""
    for qid in sorted(qrels):
        docs = qrels[qid]
        for docid in sorted(docs):
            yield QrelRecord(qid, docid, docs[docid])
