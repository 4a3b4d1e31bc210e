"""Gullibility probes of a machine judge: altered copies of pairs people graded 0, and the
judge's answers about them.

Probe answers live here and only here: they are never labels of real pairs (the passages they
were asked about do not exist in the corpus), so no score, agreement figure or queue reads them.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from ndcg_labeler.extensions import db
from ndcg_labeler.models._common import utcnow


class Probe(db.Model):
    """One probe of a judge on a test set: which pairs, under which prompt, what it cost."""

    __tablename__ = "judge_probe"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    judge_id: Mapped[int] = mapped_column(sa.ForeignKey("judge.id", ondelete="CASCADE"), index=True)
    prompt_sha256: Mapped[str] = mapped_column(sa.ForeignKey("prompt_version.sha256"))
    model: Mapped[str] = mapped_column(sa.String(200))
    pairs: Mapped[int] = mapped_column()  # pairs probed
    zero_pairs: Mapped[int] = mapped_column()  # of which people graded 0 (the rest: lowest)
    # The test set's threshold when the probe ran: "relevant" means a grade at or above it.
    threshold: Mapped[int] = mapped_column()
    prompt_tokens: Mapped[int] = mapped_column(default=0)
    completion_tokens: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    # Set when every question was asked; a cut-off probe keeps None and is never "the last".
    finished_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))


class ProbeAnswer(db.Model):
    """The judge's answer about one altered copy of one pair (grade None when unread)."""

    __tablename__ = "judge_probe_answer"

    id: Mapped[int] = mapped_column(primary_key=True)
    probe_id: Mapped[int] = mapped_column(
        sa.ForeignKey("judge_probe.id", ondelete="CASCADE"), index=True
    )
    query_id: Mapped[int] = mapped_column(sa.ForeignKey("query.id", ondelete="CASCADE"))
    chunk_id: Mapped[int] = mapped_column(sa.ForeignKey("chunk.id", ondelete="CASCADE"))
    variant: Mapped[str] = mapped_column(sa.String(16))  # original, stuffed, injected, echo, empty
    form: Mapped[str] = mapped_column(sa.String(16))  # which stuffing or phrasing ("" for one)
    # labeled, unparsed, failed: as a MachineJudgment's status
    status: Mapped[str] = mapped_column(sa.String(16))
    grade: Mapped[int | None]
    raw_answer: Mapped[str] = mapped_column(sa.Text, default="")
    error: Mapped[str] = mapped_column(sa.Text, default="")
    latency_ms: Mapped[int] = mapped_column(default=0)
    prompt_tokens: Mapped[int] = mapped_column(default=0)
    completion_tokens: Mapped[int] = mapped_column(default=0)
