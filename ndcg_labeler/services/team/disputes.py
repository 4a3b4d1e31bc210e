"""Disagreement review: the pairs whose grades differ too much or that someone could not judge.

A pair is disputed when its graded judgments span at least the test set's
disagreement_threshold (max − min grade) or when anyone answered "can't tell". Every graded
judgment counts here, imported ones included: the review exists to settle the grade scoring
uses, and scoring combines them all. Most disputed first: widest span, then most "can't tell",
then qid and docid.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from flask_sqlalchemy.pagination import Pagination
from sqlalchemy.orm import aliased

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Adjudication, Chunk, Judgment, JudgmentEvent, Query, TestSet, User
from ndcg_labeler.models.users import IMPORT_ROLE
from ndcg_labeler.scoring import POLICIES, aggregate
from ndcg_labeler.services import ServiceError, audit
from ndcg_labeler.services._db import paginate
from ndcg_labeler.services.team.adjudication import pair_state

PER_PAGE = 50


@dataclass(frozen=True)
class DisputedPair:
    """One disputed pair in the queue."""

    query_id: int
    chunk_id: int
    qid: str
    docid: str
    query_text: str
    chunk_title: str | None
    graded: int
    cant_tell: int
    min_grade: int | None
    max_grade: int | None
    spread: int
    adjudicated: int | None


@dataclass(frozen=True)
class GradeLine:
    """One annotator's current verdict on a pair, as the adjudicator sees it."""

    username: str
    is_import: bool
    status: str
    grade: int | None
    note: str
    active_ms: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class HistoryLine:
    """One recorded change to a pair (a judgment or an adjudication)."""

    kind: str
    actor: str | None
    annotator: str | None
    old_status: str | None
    new_status: str | None
    old_grade: int | None
    new_grade: int | None
    note: str
    created_at: datetime


@dataclass(frozen=True)
class PairDetail:
    """Everything an adjudicator needs about one pair."""

    query: Query
    chunk: Chunk
    grades: list[GradeLine]
    adjudication: Adjudication | None
    adjudicator: str | None
    by_policy: dict[str, int | None]
    policy: str
    history: list[HistoryLine]
    seen: str = ""  # what the page shows of the grades (adjudication.pair_state)

    @property
    def aggregated(self) -> int | None:
        """The grade the test set's policy gives without the adjudication."""
        return self.by_policy[self.policy]

    @property
    def final(self) -> int | None:
        """The grade scoring uses: the adjudication when there is one."""
        return self.adjudication.grade if self.adjudication is not None else self.aggregated


def _disputes(test_set: TestSet, threshold: int) -> sa.Subquery:
    """Per disputed pair: graded count, can't-tell count, lowest and highest grade, span."""
    graded = Judgment.status == "graded"
    low = sa.func.min(sa.case((graded, Judgment.grade)))
    high = sa.func.max(sa.case((graded, Judgment.grade)))
    spread = sa.func.coalesce(high - low, 0)
    cant = sa.func.sum(sa.case((Judgment.status == "cant_tell", 1), else_=0))
    return (
        sa.select(
            Judgment.query_id.label("query_id"),
            Judgment.chunk_id.label("chunk_id"),
            sa.func.sum(sa.case((graded, 1), else_=0)).label("graded"),
            cant.label("cant_tell"),
            low.label("low"),
            high.label("high"),
            spread.label("spread"),
        )
        .where(Judgment.test_set_id == test_set.id)
        .group_by(Judgment.query_id, Judgment.chunk_id)
        .having(sa.or_(spread >= threshold, cant > 0))
        .subquery()
    )


def _queue_order(found: sa.Subquery) -> tuple[sa.ColumnElement[Any], ...]:
    """Most disputed first; ids last so that equal sort keys still have one order."""
    return (
        found.c.spread.desc(),
        found.c.cant_tell.desc(),
        Query.sort_key,
        Chunk.sort_key,
        found.c.query_id,
        found.c.chunk_id,
    )


def _queue(found: sa.Subquery, *columns: Any) -> sa.Select[Any]:
    """`columns` of the disputed pairs, with each pair's query, chunk and final grade (if any)
    joined: what the queue's order and its pages read."""
    return (
        sa.select(*columns)
        .join(Query, Query.id == found.c.query_id)
        .join(Chunk, Chunk.id == found.c.chunk_id)
        .outerjoin(
            Adjudication,
            sa.and_(
                Adjudication.query_id == found.c.query_id,
                Adjudication.chunk_id == found.c.chunk_id,
            ),
        )
    )


def waiting_order(test_set: TestSet) -> list[tuple[int, int]]:
    """(query_id, chunk_id) of every pair waiting in the queue (no adjudication), in its order."""
    found = _disputes(test_set, test_set.disagreement_threshold)
    stmt = (
        _queue(found, found.c.query_id, found.c.chunk_id)
        .where(Adjudication.id.is_(None))
        .order_by(*_queue_order(found))
    )
    return [(query_id, chunk_id) for query_id, chunk_id in db.session.execute(stmt)]


def following(
    order: list[tuple[int, int]], after: tuple[int, int] | None = None
) -> tuple[int, int] | None:
    """The pair to review next among the waiting pairs in order: the first, or the one after
    `after` (wrapping round to the first) when `after` is among them; None when none is."""
    try:  # one pass over the order (it may hold every disputed pair of the set)
        at = order.index(after) if after is not None else None
    except ValueError:  # `after` is no longer waiting
        at = None
    if at is None:
        return order[0] if order else None
    if at + 1 < len(order):
        return order[at + 1]
    return order[0] if order[0] != after else None


def review_queue(
    test_set: TestSet, *, include_adjudicated: bool = False, page: int = 1, per_page: int = PER_PAGE
) -> Pagination:
    """One page of disputed pairs (DisputedPair), most disputed first; by default only those
    without an adjudication yet."""
    found = _disputes(test_set, test_set.disagreement_threshold)
    stmt = _queue(
        found,
        found.c.query_id,
        found.c.chunk_id,
        Query.qid,
        Chunk.docid,
        Query.text,
        Chunk.title,
        found.c.graded,
        found.c.cant_tell,
        found.c.low,
        found.c.high,
        found.c.spread,
        Adjudication.grade,
    )
    if not include_adjudicated:
        stmt = stmt.where(Adjudication.id.is_(None))
    ordered = stmt.order_by(*_queue_order(found))
    paging = paginate(ordered, page, per_page, rows=True)
    paging.items = [
        DisputedPair(
            query_id=r[0],
            chunk_id=r[1],
            qid=r[2],
            docid=r[3],
            query_text=r[4],
            chunk_title=r[5],
            graded=int(r[6] or 0),
            cant_tell=int(r[7] or 0),
            min_grade=r[8],
            max_grade=r[9],
            spread=int(r[10] or 0),
            adjudicated=r[11],
        )
        for r in paging.items
    ]
    return paging


def set_threshold(test_set: TestSet, value: int, actor: User | None) -> None:
    """Change the span of grades from which a pair is flagged for review; commits.

    `actor` None is the command line. The change is audited as the settings page audits it."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= test_set.scale_max
    ):
        raise ServiceError(
            f"the disagreement threshold must be a whole number from 1 to {test_set.scale_max}"
        )
    old = test_set.disagreement_threshold
    if value != old:
        test_set.disagreement_threshold = value
        changes = {"disagreement_threshold": {"old": old, "new": value}}
        audit.record(
            actor, "testset.settings", "test_set", test_set.id, name=test_set.name, changes=changes
        )
    db.session.commit()


def find_pair(test_set: TestSet, query_id: int, chunk_id: int) -> tuple[Query, Chunk] | None:
    """The query and chunk, when both belong to the test set."""
    query = db.session.get(Query, query_id)
    chunk = db.session.get(Chunk, chunk_id)
    if query is None or chunk is None:
        return None
    if query.test_set_id != test_set.id or chunk.test_set_id != test_set.id:
        return None
    return query, chunk


def _history(test_set: TestSet, query_id: int, chunk_id: int) -> list[HistoryLine]:
    actor = aliased(User)
    annotator = aliased(User)
    rows = db.session.execute(
        sa.select(JudgmentEvent, actor.username, annotator.username)
        .outerjoin(actor, actor.id == JudgmentEvent.actor_id)
        .outerjoin(annotator, annotator.id == JudgmentEvent.annotator_id)
        .where(
            JudgmentEvent.test_set_id == test_set.id,
            JudgmentEvent.query_id == query_id,
            JudgmentEvent.chunk_id == chunk_id,
        )
        .order_by(JudgmentEvent.id)
    )
    return [
        HistoryLine(
            kind=e.kind,
            actor=actor_name,
            annotator=annotator_name,
            old_status=e.old_status,
            new_status=e.new_status,
            old_grade=e.old_grade,
            new_grade=e.new_grade,
            note=e.note,
            created_at=e.created_at,
        )
        for e, actor_name, annotator_name in rows
    ]


def pair_detail(test_set: TestSet, query: Query, chunk: Chunk) -> PairDetail:
    """Every current verdict (with note and time), the adjudication, each policy's grade and
    the full history of one pair."""
    # First: an answer that changes while the page is read then makes the form stale, never
    # a page that shows the old grade under the new state.
    seen = pair_state(query.id, chunk.id)
    rows = db.session.execute(
        sa.select(Judgment, User.username, User.role)
        .join(User, User.id == Judgment.annotator_id)
        .where(Judgment.query_id == query.id, Judgment.chunk_id == chunk.id)
        .order_by(Judgment.updated_at, Judgment.id)
    )
    grades = [
        GradeLine(
            username=name,
            is_import=role == IMPORT_ROLE,
            status=j.status,
            grade=j.grade,
            note=j.note,
            active_ms=j.active_ms,
            created_at=j.created_at,
            updated_at=j.updated_at,
        )
        for j, name, role in rows
    ]
    adjudication = db.session.scalar(
        sa.select(Adjudication).where(
            Adjudication.query_id == query.id, Adjudication.chunk_id == chunk.id
        )
    )
    adjudicator = None
    if adjudication is not None and adjudication.adjudicator_id is not None:
        adjudicator = db.session.scalar(
            sa.select(User.username).where(User.id == adjudication.adjudicator_id)
        )
    values = [g.grade for g in grades if g.status == "graded" and g.grade is not None]
    return PairDetail(
        query=query,
        chunk=chunk,
        grades=grades,
        adjudication=adjudication,
        adjudicator=adjudicator,
        by_policy={policy: aggregate(values, policy) for policy in POLICIES},
        policy=test_set.aggregation,
        history=_history(test_set, query.id, chunk.id),
        seen=seen,
    )
