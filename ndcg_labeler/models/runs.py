"""Retriever runs, stored whole, as one ranked array per query for microsecond re-scoring."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column, relationship

from ndcg_labeler.extensions import db
from ndcg_labeler.models._common import utcnow

if TYPE_CHECKING:
    from ndcg_labeler.models.testsets import TestSet
    from ndcg_labeler.models.users import User


class Run(db.Model):
    """One uploaded run of a retriever over a test set's queries."""

    __tablename__ = "run"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(sa.String(200))
    uploaded_by_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("user.id", ondelete="SET NULL")
    )
    uploaded_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    filename: Mapped[str] = mapped_column(sa.String(300), default="")
    sha256: Mapped[str] = mapped_column(sa.String(64))
    format: Mapped[str] = mapped_column(sa.String(32), default="")
    depth: Mapped[int] = mapped_column(default=1000)
    notes: Mapped[str] = mapped_column(sa.Text, default="")
    num_queries: Mapped[int] = mapped_column(default=0)
    num_entries: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    # What validation reported: unknown queries (count and examples), lines read, etc.
    report: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    # The series (nightly builds, one experiment's tries) the run belongs to; None: none.
    series: Mapped[str | None] = mapped_column(sa.String(200), index=True)
    # Shown on the overview whatever its rank or age.
    pinned: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    # Mean NDCG@10 under the default options, as last scored: lists sort by it and the
    # overview picks the best runs by it without scoring every run on each request.
    mean_ndcg: Mapped[float | None] = mapped_column(sa.Float)
    # The list line at the default options and what it was computed for (labels version,
    # settings, queries): services.live.summary; lists read it while it is current.
    summary: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    # Retention: the run keeps only its top `kept_depth` entries per query (and its stored
    # per-query scores); NULL while it is whole.
    kept_depth: Mapped[int | None] = mapped_column()
    archived_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))

    test_set: Mapped[TestSet] = relationship(back_populates="runs", viewonly=True)
    uploader: Mapped[User | None] = relationship(viewonly=True)
    tags: Mapped[list[RunTag]] = relationship(
        order_by="RunTag.tag", cascade="all, delete-orphan", passive_deletes=True
    )

    @property
    def archived(self) -> bool:
        """Retention dropped the run's entries below `kept_depth`."""
        return self.kept_depth is not None

    @property
    def tag_names(self) -> list[str]:
        """The run's tags, sorted."""
        return [tag.tag for tag in self.tags]

    __table_args__ = (sa.UniqueConstraint("test_set_id", "name"),)


class RunTag(db.Model):
    """One tag of a run (lists filter by tag)."""

    __tablename__ = "run_tag"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(sa.ForeignKey("run.id", ondelete="CASCADE"))
    tag: Mapped[str] = mapped_column(sa.String(64), index=True)

    __table_args__ = (sa.UniqueConstraint("run_id", "tag"),)


class RunQuery(db.Model):
    """The ranked list of one query in one run: docids (newline-joined) and float64 scores,
    both stored compact and exact (formats.encode_ranked / decode_ranked)."""

    __tablename__ = "run_query"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(sa.ForeignKey("run.id", ondelete="CASCADE"))
    query_id: Mapped[int] = mapped_column(sa.ForeignKey("query.id", ondelete="CASCADE"))
    # Already in trec_eval order (score desc, docid desc) and cut at the run's depth; read
    # them through formats.decode_ranked (a versioned header; legacy rows are plain).
    docids: Mapped[bytes] = mapped_column(sa.LargeBinary)
    scores: Mapped[bytes] = mapped_column(sa.LargeBinary)

    __table_args__ = (sa.UniqueConstraint("run_id", "query_id"),)


class RunScore(db.Model):
    """A run's stored per-query scores under one scoring setting, at one labels version.

    `data` holds every measure of every test-set query as numpy arrays (np.savez), so that
    listings, dashboards and a new process's first `run score` never read the run's entries;
    a grade change re-scores only the queries it touches and moves labels_version forward.
    """

    __tablename__ = "run_score"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(sa.ForeignKey("run.id", ondelete="CASCADE"))
    # policy|threshold|gain|ideal|judged_only|cutoffs|top grade|format|labels
    # (services.live.store.settings_key)
    settings: Mapped[str] = mapped_column(sa.String(200))
    labels_version: Mapped[int] = mapped_column(default=0)
    # The judgment events applied so far: the highest id (recent ids are in `data`).
    max_event_id: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    # The test set's largest query id when computed: new queries mean a full re-scoring.
    queries_key: Mapped[int] = mapped_column(default=0)
    computed_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    data: Mapped[bytes] = mapped_column(sa.LargeBinary)

    __table_args__ = (sa.UniqueConstraint("run_id", "settings"),)
