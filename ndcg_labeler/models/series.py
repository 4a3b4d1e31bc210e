"""Run series: a series' pinned baseline, and the scheduled evaluations (checks) of its runs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column, relationship

from ndcg_labeler.extensions import db
from ndcg_labeler.models._common import utcnow
from ndcg_labeler.models.endpoints import RetrieverEndpoint


class SeriesSetting(db.Model):
    """A series' settings: the run pinned as its baseline (None: the last passing run)."""

    __tablename__ = "series_setting"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(sa.ForeignKey("test_set.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(sa.String(200))
    baseline_run_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("run.id", ondelete="SET NULL")
    )

    __table_args__ = (sa.UniqueConstraint("test_set_id", "name"),)


class SeriesCheck(db.Model):
    """One scheduled evaluation: the run fetched, the gate's outcome, and the alert sent."""

    __tablename__ = "series_check"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    series: Mapped[str] = mapped_column(sa.String(200))
    # The endpoint's name when the check ran (what its alert said); endpoint_id follows the
    # endpoint through renames, and is NULL once it is deleted.
    endpoint: Mapped[str] = mapped_column(sa.String(100), default="")
    endpoint_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("retriever_endpoint.id", ondelete="SET NULL")
    )
    slot: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    run_id: Mapped[int | None] = mapped_column(sa.ForeignKey("run.id", ondelete="SET NULL"))
    baseline_run_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("run.id", ondelete="SET NULL")
    )
    # pass | fail | inconclusive | baseline (the series' first run) | error
    outcome: Mapped[str] = mapped_column(sa.String(20))
    summary: Mapped[str] = mapped_column(sa.Text, default="")
    result: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    # sent | failed | not-configured | "" (no alert: the run passed)
    alert: Mapped[str] = mapped_column(sa.String(20), default="")
    alert_error: Mapped[str] = mapped_column(sa.Text, default="")
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)

    current_endpoint: Mapped[RetrieverEndpoint | None] = relationship()
