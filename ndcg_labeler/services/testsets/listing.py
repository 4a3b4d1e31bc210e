"""The query and chunk lists of a test set: natural order (q2 before q10), search, filters."""

from __future__ import annotations

import sqlalchemy as sa
from flask_sqlalchemy.pagination import Pagination

from ndcg_labeler.models import Chunk, Judgment, Pair, Query, TestSet
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services._db import paginate

# Filters of the query and chunk lists: value -> what the filter shows.
QUERY_STATES = {
    "": "all queries",
    "ungraded": "no pair graded yet",
    "partly": "some pairs graded",
    "graded": "every pair graded",
}
CHUNK_STATES = {
    "": "all chunks",
    "graded": "graded for some query",
    "ungraded": "not graded yet",
    "missing": "without text",
}
MAX_SEARCH = 200


def _pattern(search: str) -> str | None:
    """A LIKE pattern finding `search` anywhere (its % and _ taken literally), or None."""
    text = " ".join(search.split())[:MAX_SEARCH]
    if not text:
        return None
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _state(value: str, states: dict[str, str]) -> str:
    if value not in states:
        raise ServiceError(
            f"unknown filter '{value}'; use one of {', '.join(s for s in states if s)}"
        )
    return value


def queries_page(
    test_set: TestSet, page: int, per_page: int = 50, *, search: str = "", state: str = ""
) -> Pagination:
    """One page of the test set's queries in natural qid order (q2 before q10): rows of
    (Query, pairs, judged pairs); `search` finds text in the qid, query or narrative (any
    case), `state` is a QUERY_STATES filter."""
    state = _state(state, QUERY_STATES)
    pairs = (
        sa.select(sa.func.count())
        .where(Pair.query_id == Query.id)
        .correlate(Query)
        .scalar_subquery()
        .label("pairs")
    )
    judged = (
        sa.select(sa.func.count(sa.distinct(Judgment.chunk_id)))
        .where(Judgment.query_id == Query.id, Judgment.status == "graded")
        .correlate(Query)
        .scalar_subquery()
        .label("judged")
    )
    stmt = sa.select(Query, pairs, judged).where(Query.test_set_id == test_set.id)
    pattern = _pattern(search)
    if pattern:
        stmt = stmt.where(
            sa.or_(
                Query.qid.ilike(pattern, escape="\\"),
                Query.text.ilike(pattern, escape="\\"),
                Query.narrative.ilike(pattern, escape="\\"),
            )
        )
    if state == "ungraded":
        stmt = stmt.where(judged == 0)
    elif state == "partly":
        stmt = stmt.where(judged > 0, judged < pairs)
    elif state == "graded":
        stmt = stmt.where(pairs > 0, judged >= pairs)
    return paginate(stmt.order_by(Query.sort_key, Query.id), page, per_page, rows=True)


def chunks_page(
    test_set: TestSet, page: int, *, search: str = "", state: str = "", per_page: int = 50
) -> Pagination:
    """One page of the test set's chunks in natural docid order; `search` finds text in the
    docid, title or text (any case), `state` is a CHUNK_STATES filter."""
    state = _state(state, CHUNK_STATES)
    stmt = sa.select(Chunk).where(Chunk.test_set_id == test_set.id)
    pattern = _pattern(search)
    if pattern:
        stmt = stmt.where(
            sa.or_(
                Chunk.docid.ilike(pattern, escape="\\"),
                Chunk.title.ilike(pattern, escape="\\"),
                Chunk.text.ilike(pattern, escape="\\"),
            )
        )
    if state == "missing":
        stmt = stmt.where(Chunk.text.is_(None))
    elif state in ("graded", "ungraded"):
        graded = sa.select(Judgment.chunk_id).where(
            Judgment.test_set_id == test_set.id, Judgment.status == "graded"
        )
        found = Chunk.id.in_(graded)
        stmt = stmt.where(found if state == "graded" else sa.not_(found))
    return paginate(stmt.order_by(Chunk.sort_key, Chunk.id), page, per_page)
