"""A query's drill-down: why it scores what it does, and grading its unjudged chunks in place."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Query, Run, TestSet, User
from ndcg_labeler.services import ServiceError, labeling
from ndcg_labeler.services.dashboard.bands import band
from ndcg_labeler.services.dashboard.overview import undefined_reason
from ndcg_labeler.services.labeling import SaveResult
from ndcg_labeler.services.live import QueryDetail, ScoreOptions, query_detail


@dataclass(frozen=True)
class DrillDown:
    """The query detail plus what the page says about it."""

    detail: QueryDetail
    band: str
    reason: str | None
    grade_labels: list[dict[str, str]]

    @property
    def unjudged_in_top_k(self) -> int:
        """Chunks of the run's top k without a grade."""
        return sum(1 for row in self.detail.ranked if not row.judged)

    @property
    def ungradable_in_top_k(self) -> int:
        """Unjudged chunks of the top k that cannot be graded here: named by the run but by no
        corpus (no chunk row, so no grade buttons)."""
        return sum(1 for row in self.detail.ranked if not row.judged and row.chunk_id is None)


def get_query(test_set: TestSet, query_id: int) -> Query | None:
    """The query with this id if it belongs to the test set."""
    query = db.session.get(Query, query_id)
    return query if query is not None and query.test_set_id == test_set.id else None


def drill_down(test_set: TestSet, run: Run, query: Query, options: ScoreOptions) -> DrillDown:
    """The run's top k beside the ideal top k for `query`, with band and undefined reason."""
    detail = query_detail(run, query, options)
    return DrillDown(
        detail=detail,
        band=band(detail.ndcg),
        reason=undefined_reason(detail.options.ideal) if detail.ndcg is None else None,
        grade_labels=list(test_set.grade_labels),
    )


def grade_chunk(
    test_set: TestSet,
    query: Query,
    chunk_id: int,
    grade: int | None,
    user: User,
    expected_version: int | None = None,
) -> SaveResult:
    """Save `user`'s grade of one chunk for `query` (the drill-down's in-place grading);
    labeling.Conflict when my judgment changed since the page showed `expected_version`."""
    if grade is None:
        raise ServiceError(f"choose a grade from 0 to {test_set.scale_max}")
    chunk = db.session.scalar(
        sa.select(Chunk).where(Chunk.id == chunk_id, Chunk.test_set_id == test_set.id)
    )
    if chunk is None:
        raise ServiceError("that chunk is not in this test set")
    return labeling.save_judgment(
        test_set,
        query,
        chunk,
        user,
        status="graded",
        grade=grade,
        expected_version=expected_version,
        via="drilldown",
    )
