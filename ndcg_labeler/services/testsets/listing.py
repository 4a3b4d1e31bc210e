"""The query and chunk lists of a test set: natural order (q2 before q10), search, filters."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from flask_sqlalchemy.pagination import Pagination

from ndcg_labeler import sqlite
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
MANY_HITS = 10_000
"""A search with more hits than this is not counted: a frequent word has 160,000 at 10M chunks,
and ranking them all in docid order reads every one. Its pages walk the test set's natural
order instead, testing each chunk, and the list says "more than 10,000"."""
# Rows on a page of the test set's queries or chunks.
PER_PAGE = 50


def _searchable(search: str) -> str:
    """`search` without NUL characters: PostgreSQL refuses them in any text parameter (a 500),
    and no stored id or text holds one (imports refuse them), so dropping them finds the same."""
    return search.replace("\x00", "")


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


def _title_and_text() -> sa.ColumnElement[str]:
    """A chunk's title and text, as migration 0010 indexes them on PostgreSQL."""
    return sa.func.coalesce(Chunk.title, "") + " " + sa.func.coalesce(Chunk.text, "")


def _document() -> sa.ColumnElement[Any]:
    """PostgreSQL: the tsvector of a chunk's title and text, as migration 0010 indexes it."""
    return sa.func.to_tsvector("simple", _title_and_text())


def _tsquery(words: list[str], *, whole: bool = False) -> sa.ColumnElement[Any]:
    """PostgreSQL: every word, each as a prefix (or, `whole`, as itself)."""
    mark = "" if whole else ":*"
    return sa.func.to_tsquery("simple", " & ".join(f"{w}{mark}" for w in words))


def _text_hits(
    test_set_id: int, words: list[str], *, own: bool, whole: bool = False
) -> sa.Select[tuple[int]]:
    """Ids of chunks whose title or text has every word (each as a prefix: "refund" finds
    "refunds"), through the full-text index (migration 0010_chunk_search). SQLite's index
    holds every test set: `own` keeps only this one's chunks (a lookup a hit unless no other
    set has any; without it the caller's own test keeps them). PostgreSQL: `whole` finds the
    words themselves only."""
    if db.session.get_bind().dialect.name == "postgresql":
        found = _document().op("@@")(_tsquery(words, whole=whole))
        return sa.select(Chunk.id).where(Chunk.test_set_id == test_set_id, found)
    match = sa.text("chunk_fts MATCH :words").bindparams(words=" ".join(f'"{w}"*' for w in words))
    rowid = sa.literal_column("chunk_fts.rowid")
    if own and not _alone(test_set_id):
        # The unary + keeps SQLite from walking the test set's chunks and asking the index
        # about each: the hits drive, each looked up by rowid.
        joined = sa.table("chunk_fts").join(Chunk.__table__, Chunk.id == rowid)
        own_set = sa.literal_column("+chunk.test_set_id") == test_set_id
        return sa.select(Chunk.id).select_from(joined).where(match, own_set)
    return sa.select(rowid.label("id")).select_from(sa.table("chunk_fts")).where(match)


def _alone(test_set_id: int) -> bool:
    """Whether no other test set has chunks: then every full-text hit is this one's and needs
    no lookup (10,000 of them cost ~0.2 s of a first search at 10M chunks). Two seeks on the
    test set index (a `<>` would walk this set's own entries)."""
    chunk = Chunk.__table__
    before = sa.exists().where(chunk.c.test_set_id < test_set_id)
    after = sa.exists().where(chunk.c.test_set_id > test_set_id)
    return not db.session.scalar(sa.select(sa.or_(before, after)))


def _docid_starts(search: str) -> sa.ColumnElement[bool]:
    """Whether a chunk's docid starts with `search` (a range on the unique index)."""
    prefix = " ".join(search.split())[:MAX_SEARCH]
    return sa.and_(Chunk.docid >= prefix, Chunk.docid < prefix + "\U0010ffff")


def _docid_hits(test_set_id: int, search: str) -> sa.Select[tuple[int]]:
    """Ids of chunks whose docid starts with `search`."""
    return sa.select(Chunk.id).where(Chunk.test_set_id == test_set_id, _docid_starts(search))


def _search_hits(
    test_set_id: int, search: str, *, own: bool = False
) -> sa.CompoundSelect | sa.Select[tuple[int]]:
    """Ids of chunks found by `search`: docids that start with it, and texts with its words
    (full-text). A union of two indexed lookups, never a scan of the texts."""
    words = _words(search)
    by_docid = _docid_hits(test_set_id, search)
    return sa.union(by_docid, _text_hits(test_set_id, words, own=own)) if words else by_docid


def _hit_ids(test_set_id: int, search: str) -> set[int] | None:
    """The ids of the chunks `search` finds, or None past MANY_HITS. Each way of finding stops
    at the cap (the full-text index hands its hits over unranked, so a LIMIT stops early), and
    the ids are read once: PostgreSQL's bitmap of a prefix's hits costs ~0.2 s at 10M chunks."""
    words = _words(search)
    if words and db.session.get_bind().dialect.name == "postgresql":
        # The chunks with the whole words are among those with the prefixes, and GIN reads
        # them from one posting list a word instead of merging every word the prefix starts
        # (a frequent word at 10M chunks: 42 ms against 194 ms). Past the cap, so are those.
        whole = _text_hits(test_set_id, words, own=True, whole=True)
        if len(db.session.scalars(whole.limit(MANY_HITS + 1)).all()) > MANY_HITS:
            return None
    ways = [_docid_hits(test_set_id, search)]
    if words:
        ways.append(_text_hits(test_set_id, words, own=True))
    found: set[int] = set()
    for way in ways:
        ids = db.session.scalars(way.limit(MANY_HITS + 1)).all()
        if len(ids) > MANY_HITS:
            return None
        found.update(ids)
    return found if len(found) <= MANY_HITS else None


def _row_found(search: str) -> sa.ColumnElement[bool]:
    """PostgreSQL: whether a chunk row is one `search` finds, tested on the row alone (to walk
    the natural order). The words' plain substrings go first: an AND tests its terms in order,
    and to_tsvector (~40 µs a chunk) then runs only where every word's letters are."""
    by_docid = _docid_starts(search)
    words = _words(search)
    if not words:
        return by_docid
    # A word with "_" is two tokens to the parser, maybe far apart: no substring test for it.
    likely = [
        sa.func.strpos(sa.func.lower(_title_and_text()), sa.func.lower(word)) > 0
        for word in words
        if word.isalnum()
    ]
    return sa.or_(by_docid, sa.and_(*likely, _document().op("@@")(_tsquery(words))))


@contextlib.contextmanager
def _natural_walk() -> Iterator[None]:
    """PostgreSQL: plan the SELECTs inside as a walk of ix_chunk_natural. The planner takes a
    word's hits for a handful (a substring test defeats its statistics) and would rank them
    all; the settings go back to the session's afterwards, as the page renders after this."""
    names = ("enable_bitmapscan", "enable_seqscan", "enable_sort")
    for name in names:
        db.session.execute(sa.text(f"SET LOCAL {name} = off"))
    try:
        yield
    finally:
        for name in names:
            db.session.execute(sa.text(f"SET LOCAL {name} TO DEFAULT"))


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
    search = _searchable(search)
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
        # Not ILIKE: on SQLite it is lower() LIKE lower(), and both fold ASCII letters only
        # ('Ärger' missed 'ärger'). sqlite.lower folds any letter there, lower() elsewhere.
        folded = pattern.lower()
        stmt = stmt.where(
            sa.or_(
                *(
                    sqlite.lower(column).like(folded, escape="\\")
                    for column in (Query.qid, Query.text, Query.narrative)
                )
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
    search = _searchable(search)
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
    if not search.strip():
        return paginate(stmt.order_by(*order), page, per_page)
    dialect = db.session.get_bind().dialect.name
    if dialect == "postgresql" and _words(search):
        # A frequent word's bitmap (159,350 hits at 10M chunks) outgrows the default 4 MB of
        # work_mem and turns lossy: to_tsvector recomputed for every row of those pages. 64 MB
        # keeps it exact; JIT compiling the plan costs more than it saves here. SET LOCAL:
        # this transaction only.
        db.session.execute(sa.text("SET LOCAL work_mem = '64MB'"))
        db.session.execute(sa.text("SET LOCAL jit = off"))
    hits = _hit_ids(test_set.id, search)
    if hits is not None:
        # Few: rank the hits themselves. SQLite would walk ix_chunk_natural in order and test
        # each chunk against them; the unary + keeps that index out of its plan. PostgreSQL
        # takes the ids read already as one array.
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import ARRAY  # only a PostgreSQL page needs it

            ids = sa.bindparam("hits", sorted(hits), type_=ARRAY(sa.Integer))
            found = Chunk.id == sa.any_(ids)
        else:
            found = Chunk.id.in_(_search_hits(test_set.id, search, own=True))
        stmt = stmt.where(found)
        total = len(hits) if not where else _count(stmt)
        if dialect == "sqlite":
            own = sa.literal_column("+chunk.test_set_id") == test_set.id
            stmt = sa.select(Chunk).where(own, found, *where)
            order = [sa.literal_column("+chunk.sort_key"), sa.literal_column("+chunk.id")]
        return paginate(stmt.order_by(*order), page, per_page, total=total)
    if dialect != "postgresql":
        stmt = stmt.where(Chunk.id.in_(_search_hits(test_set.id, search)))
        return paginate(stmt.order_by(*order), page, per_page, at_least=MANY_HITS)
    with _natural_walk():
        stmt = stmt.where(_row_found(search))
        return paginate(stmt.order_by(*order), page, per_page, at_least=MANY_HITS)


def _count(stmt: sa.Select[Any]) -> int:
    """The rows of a SELECT (counted once, then handed to the pagination)."""
    counted = sa.select(sa.func.count()).select_from(stmt.order_by(None).subquery())
    return int(db.session.scalar(counted) or 0)
