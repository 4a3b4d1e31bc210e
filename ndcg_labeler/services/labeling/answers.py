"""My own answers: the queries I answered, one query's pairs with MY judgments only (never
anyone else's: judging stays blind), and my judgments' versions for the grading forms."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, Pair, Query, TestSet, User


@dataclass(frozen=True)
class AnsweredQuery:
    """A query I answered at least one pair of, with how many."""

    query: Query
    answered: int


@dataclass(frozen=True)
class MyAnswer:
    """One pair of a query: the chunk and my own judgment of it (never anyone else's)."""

    pair: Pair
    chunk: Chunk
    mine: Judgment | None


def answered_queries(test_set: TestSet, user: User) -> list[AnsweredQuery]:
    """The queries of the test set I answered (graded, can't tell or skipped), by qid."""
    rows = db.session.execute(
        sa.select(Query, sa.func.count(Judgment.id))
        .join(Judgment, Judgment.query_id == Query.id)
        .where(Judgment.annotator_id == user.id, Judgment.test_set_id == test_set.id)
        .group_by(Query.id)
        .order_by(Query.sort_key, Query.id)
    )
    return [AnsweredQuery(query, int(count)) for query, count in rows]


def my_answers(query: Query, user: User) -> list[MyAnswer]:
    """Every pool pair of the query with its chunk and my judgment (None when unanswered)."""
    rows = db.session.execute(
        sa.select(Pair, Chunk)
        .join(Chunk, Chunk.id == Pair.chunk_id)
        .where(Pair.query_id == query.id)
        .order_by(Pair.priority, Pair.id)
    ).all()
    mine = {
        j.chunk_id: j
        for j in db.session.scalars(
            sa.select(Judgment).where(
                Judgment.query_id == query.id, Judgment.annotator_id == user.id
            )
        )
    }
    return [MyAnswer(pair, chunk, mine.get(chunk.id)) for pair, chunk in rows]


def my_versions(query: Query, user: User) -> dict[int, int]:
    """chunk id -> the version of my judgment of it for this query (forms carry it, so that a
    save over a judgment changed elsewhere meanwhile is refused, not silently applied)."""
    rows = db.session.execute(
        sa.select(Judgment.chunk_id, Judgment.version).where(
            Judgment.query_id == query.id, Judgment.annotator_id == user.id
        )
    )
    return {int(chunk_id): int(version) for chunk_id, version in rows}
