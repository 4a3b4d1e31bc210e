"""A test set's live retriever endpoints: how to ask them and how to read their answers.

Secrets never get here: header values may name environment variables (${VAR}), which are read
when a request is made.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from ndcg_labeler.extensions import db
from ndcg_labeler.models._common import utcnow


class RetrieverEndpoint(db.Model):
    """An HTTP search endpoint of a test set (GET with a URL template, or POST with a body)."""

    __tablename__ = "retriever_endpoint"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(sa.String(100))
    url: Mapped[str] = mapped_column(sa.String(2000))  # with {query}, {qid}, {k}
    method: Mapped[str] = mapped_column(sa.String(8), default="GET")
    body_template: Mapped[str] = mapped_column(sa.Text, default="")  # JSON with placeholders
    headers: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)  # name -> "… ${VAR} …"
    hits_expr: Mapped[str] = mapped_column(sa.String(500))
    id_expr: Mapped[str] = mapped_column(sa.String(500))
    score_expr: Mapped[str] = mapped_column(sa.String(500), default="")
    text_expr: Mapped[str] = mapped_column(sa.String(500), default="")
    concurrency: Mapped[int] = mapped_column(default=4)
    requests_per_minute: Mapped[int] = mapped_column(default=0)
    timeout: Mapped[float] = mapped_column(default=30.0)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    # A scheduled evaluation: "daily HH:MM" or a five-field cron expression (UTC); "" for none.
    schedule: Mapped[str] = mapped_column(sa.String(100), default="")
    schedule_series: Mapped[str] = mapped_column(sa.String(200), default="")
    schedule_k: Mapped[int] = mapped_column(default=100)
    # The last slot claimed (run or being run): a slot is claimed once, so it never runs twice.
    schedule_last_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))

    __table_args__ = (sa.UniqueConstraint("test_set_id", "name"),)
