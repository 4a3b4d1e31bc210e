"""The query and chunk lists of a test set: natural order (q2 before q10), search, filters."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa
from flask_sqlalchemy.pagination import Pagination

from ndcg_labeler.extensions import db
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
# Up to this many search hits, SQLite sorts the hits themselves instead of walking the test
# set's natural-order index until a page of them turns up (see chunks_page); the count is the
# one the page shows, so it costs no extra query.
FEW_HITS = 5000
# Rows on a page of the test set's queries or chunks.
PER_PAGE = 50


def _pattern(search: str) -> str | None:
    """A LIKE pattern finding `search` anywhere (its % and _ taken literally), or None."""
    text = " ".join(search.split())[:MAX_SEARCH]
    if not text:
        return None
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_WORD = re.compile(r"\w+")


def _words(search: str) -> list[str]:
    """The words of a search, lower-cased (letters and digits; at most 10)."""
    return [w.lower() for w in _WORD.findall(search[:MAX_SEARCH])][:10]


def _text_hits(test_set_id: int, words: list[str]) -> sa.Select[tuple[int]]:
    """Ids of chunks whose title or text has every word (each as a prefix: "refund" finds
    "refunds"), through the full-text index (migration 0010_chunk_search)."""
    if db.session.get_bind().dialect.name == "postgresql":
        document = sa.func.to_tsvector(
            "simple", sa.func.coalesce(Chunk.title, "") + " " + sa.func.coalesce(Chunk.text, "")
        )
        query = sa.func.to_tsquery("simple", " & ".join(f"{w}:*" for w in words))
        return sa.select(Chunk.id).where(Chunk.test_set_id == test_set_id, document.op("@@")(query))
    match = " ".join(f'"{w}"*' for w in words)
    hits = sa.select(sa.literal_column("rowid").label("id")).select_from(sa.table("chunk_fts"))
    return hits.where(sa.text("chunk_fts MATCH :words").bindparams(words=match))


def _search_hits(test_set_id: int, search: str) -> sa.CompoundSelect | sa.Select[tuple[int]]:
    """Ids of chunks found by `search`: docids that start with it (a range on the unique
    (test set, docid) index), and texts with its words (full-text). A union of two indexed
    lookups, never a scan of the texts."""
    prefix = " ".join(search.split())[:MAX_SEARCH]
    by_docid = sa.select(Chunk.id).where(
        Chunk.test_set_id == test_set_id,
        Chunk.docid >= prefix,
        Chunk.docid < prefix + "\U0010ffff",
    )
    words = _words(search)
    return sa.union(by_docid, _text_hits(test_set_id, words)) if words else by_docid


def _state(value: str, states: dict[str, str]) -> str:
    if value not in states:
        raise ServiceError(
            f"unknown filter '{value}'; use one of {', '.join(s for s in states if s)}"
        )
    return value


def queries_page(
    test_set: TestSet, page: int, per_page: int = PER_PAGE, *, search: str = "", state: str = ""
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
    test_set: TestSet, page: int, *, search: str = "", state: str = "", per_page: int = PER_PAGE
) -> Pagination:
    """One page of the test set's chunks in natural docid order; `search` finds docids that
    start with it, or titles and texts with every word of it (full-text, any case, words as
    prefixes); `state` is a CHUNK_STATES filter."""
    state = _state(state, CHUNK_STATES)
    where: list[sa.ColumnElement[bool]] = []
    if state == "missing":
        where.append(Chunk.text.is_(None))
    elif state in ("graded", "ungraded"):
        graded = sa.select(Judgment.chunk_id).where(
            Judgment.test_set_id == test_set.id, Judgment.status == "graded"
        )
        found = Chunk.id.in_(graded)
        where.append(found if state == "graded" else sa.not_(found))
    stmt = sa.select(Chunk).where(Chunk.test_set_id == test_set.id, *where)
    order: list[sa.ColumnElement[Any]] = [Chunk.sort_key, Chunk.id]
    total: int | None = None
    if search.strip():
        hits = Chunk.id.in_(_search_hits(test_set.id, search))
        stmt = stmt.where(hits)
        dialect = db.session.get_bind().dialect.name
        if dialect == "sqlite":
            total = _count(stmt)
        elif dialect == "postgresql" and _words(search):
            # A frequent word's bitmap (159,350 hits at 10M chunks) outgrows the default 4 MB
            # of work_mem and turns lossy: to_tsvector recomputed for every row of those pages
            # (the count took 35 s). 64 MB keeps it exact; JIT compiling the plan costs more
            # than it saves here. SET LOCAL: this transaction only.
            db.session.execute(sa.text("SET LOCAL work_mem = '64MB'"))
            db.session.execute(sa.text("SET LOCAL jit = off"))
        if total is not None and total <= FEW_HITS:
            # SQLite would walk ix_chunk_natural in order and test each chunk against the
            # hits: at 10M chunks a docid prefix or a rare word read millions of entries for
            # a page of 50. The unary + keeps the index out of the plan: the hits drive it.
            own = sa.literal_column("+chunk.test_set_id") == test_set.id
            stmt = sa.select(Chunk).where(own, hits, *where)
            order = [sa.literal_column("+chunk.sort_key"), sa.literal_column("+chunk.id")]
    return paginate(stmt.order_by(*order), page, per_page, total=total)


def _count(stmt: sa.Select[Any]) -> int:
    """The rows of a SELECT (counted once, then handed to the pagination)."""
    counted = sa.select(sa.func.count()).select_from(stmt.order_by(None).subquery())
    return int(db.session.scalar(counted) or 0)
