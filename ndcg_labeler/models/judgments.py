"""Judgments (one per query, chunk and annotator), their history, adjudications and leases."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column, relationship

from ndcg_labeler.extensions import db
from ndcg_labeler.models._common import utcnow
from ndcg_labeler.models.testsets import Chunk, Query
from ndcg_labeler.models.users import User

# graded: `grade` holds the grade; cant_tell and skipped carry no grade and never count in scoring.
STATUSES = ("graded", "cant_tell", "skipped")


class Judgment(db.Model):
    """One annotator's current verdict on one query-chunk pair; saving again updates it."""

    __tablename__ = "judgment"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    query_id: Mapped[int] = mapped_column(sa.ForeignKey("query.id", ondelete="CASCADE"))
    chunk_id: Mapped[int] = mapped_column(sa.ForeignKey("chunk.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(sa.ForeignKey("user.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(sa.String(16), default="graded")
    grade: Mapped[int | None]
    note: Mapped[str] = mapped_column(sa.Text, default="")
    active_ms: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    # Bumped by every change (optimistic concurrency: a form saves only over the version it
    # was rendered with; see services/labeling/judging.py).
    version: Mapped[int] = mapped_column(sa.Integer, default=1, server_default="1")
    # Where the last change came from: "queue" (labeling, imports, reviews) or "drilldown"
    # (graded beside a run's ranking and the current grades: a correction, not a blind pass,
    # so the agreement figures leave it out; see services/team/agreement.py).
    via: Mapped[str] = mapped_column(sa.String(16), default="queue", server_default="queue")
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        sa.DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )

    query: Mapped[Query] = relationship()
    chunk: Mapped[Chunk] = relationship()
    annotator: Mapped[User] = relationship()

    __table_args__ = (
        sa.UniqueConstraint("query_id", "chunk_id", "annotator_id"),
        sa.Index("ix_judgment_annotator_id_test_set_id", "annotator_id", "test_set_id"),
        # My latest answer (the queue's current query, "back"): newest first, no sort.
        sa.Index("ix_judgment_annotator_recent", "annotator_id", "test_set_id", "updated_at", "id"),
        sa.CheckConstraint(
            "(status = 'graded' AND grade IS NOT NULL) OR (status <> 'graded' AND grade IS NULL)",
            name="grade_matches_status",
        ),
    )


class JudgmentEvent(db.Model):
    """Append-only history: every change to a judgment or an adjudication, with who and when."""

    __tablename__ = "judgment_event"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(sa.ForeignKey("test_set.id", ondelete="CASCADE"))
    query_id: Mapped[int] = mapped_column(sa.ForeignKey("query.id", ondelete="CASCADE"))
    chunk_id: Mapped[int] = mapped_column(sa.ForeignKey("chunk.id", ondelete="CASCADE"))
    # The person who acted, and whose judgment changed (None for an adjudication).
    actor_id: Mapped[int | None] = mapped_column(sa.ForeignKey("user.id", ondelete="SET NULL"))
    annotator_id: Mapped[int | None] = mapped_column(sa.ForeignKey("user.id", ondelete="SET NULL"))
    kind: Mapped[str] = mapped_column(sa.String(16), default="judgment")
    old_status: Mapped[str | None] = mapped_column(sa.String(16))
    new_status: Mapped[str | None] = mapped_column(sa.String(16))
    old_grade: Mapped[int | None]
    new_grade: Mapped[int | None]
    note: Mapped[str] = mapped_column(sa.Text, default="")
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)

    __table_args__ = (sa.Index("ix_judgment_event_test_set_id_id", "test_set_id", "id"),)


class Adjudication(db.Model):
    """An admin's final grade for a pair; it overrides every aggregation policy."""

    __tablename__ = "adjudication"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    query_id: Mapped[int] = mapped_column(sa.ForeignKey("query.id", ondelete="CASCADE"))
    chunk_id: Mapped[int] = mapped_column(sa.ForeignKey("chunk.id", ondelete="CASCADE"))
    grade: Mapped[int]
    note: Mapped[str] = mapped_column(sa.Text, default="")
    adjudicator_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("user.id", ondelete="SET NULL")
    )
    updated_at: Mapped[datetime] = mapped_column(
        sa.DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )

    __table_args__ = (sa.UniqueConstraint("query_id", "chunk_id"),)


class Assignment(db.Model):
    """A pair handed to an annotator and not yet judged: a lease that caps overlap."""

    __tablename__ = "assignment"

    id: Mapped[int] = mapped_column(primary_key=True)
    pair_id: Mapped[int] = mapped_column(sa.ForeignKey("pair.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("user.id", ondelete="CASCADE"))
    assigned_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)

    __table_args__ = (sa.UniqueConstraint("pair_id", "user_id"),)
