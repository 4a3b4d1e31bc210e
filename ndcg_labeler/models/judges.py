"""Machine judges (LLMs behind an OpenAI-compatible endpoint), their prompts and their labels.

Machine labels are a separate source: they never count as human judgments, never appear in
agreement figures or the review queue, and reach scores only when a view asks for them.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from ndcg_labeler.extensions import db
from ndcg_labeler.models._common import utcnow


class Judge(db.Model):
    """An LLM judge: where to ask, which model, how fast. The API key is never stored: only the
    name of the environment variable that holds it."""

    __tablename__ = "judge"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(100), unique=True)
    base_url: Mapped[str] = mapped_column(sa.String(500))
    model: Mapped[str] = mapped_column(sa.String(200))
    api_key_env: Mapped[str] = mapped_column(sa.String(100), default="")
    temperature: Mapped[float] = mapped_column(default=0.0)
    # No default here: add_judge, the only writer, sets it (judges.DEFAULTS).
    max_tokens: Mapped[int] = mapped_column()
    timeout: Mapped[float] = mapped_column(default=60.0)
    concurrency: Mapped[int] = mapped_column(default=8)
    requests_per_minute: Mapped[int] = mapped_column(default=0)  # 0: no limit
    # Optional prices in dollars per million input (prompt) and output (completion) tokens,
    # as providers quote them; None: unknown, so costs are not shown (tokens still are).
    input_price: Mapped[float | None] = mapped_column()
    output_price: Mapped[float | None] = mapped_column()
    # Jinja template of the prompt; empty means the default (UMBRELA-style) prompt.
    prompt_template: Mapped[str] = mapped_column(sa.Text, default="")
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    # Set when archived: hidden from the label lists and suggestions, its answers kept.
    archived_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    # Up to this many human-graded examples of the same test set go into each prompt (0: none).
    few_shot: Mapped[int] = mapped_column(default=0, server_default="0")
    # An ensemble: JSON {"members": [judge ids], "combine": "median"|"majority"}; "" otherwise.
    ensemble: Mapped[str] = mapped_column(sa.Text, default="", server_default="")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """Dollars for these tokens at the judge's prices; None when no price is set or a
        needed one is unknown."""
        if (
            (self.input_price is None and self.output_price is None)
            or (prompt_tokens and self.input_price is None)
            or (completion_tokens and self.output_price is None)
        ):
            return None
        return (
            prompt_tokens * (self.input_price or 0.0)
            + completion_tokens * (self.output_price or 0.0)
        ) / 1_000_000


class PromptVersion(db.Model):
    """Every distinct prompt template a judge ran with, by its sha256."""

    __tablename__ = "prompt_version"

    sha256: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    template: Mapped[str] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)


class MachineJudgment(db.Model):
    """One judge's answer on one pair under one prompt version (grade None when unparsed)."""

    __tablename__ = "machine_judgment"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    query_id: Mapped[int] = mapped_column(sa.ForeignKey("query.id", ondelete="CASCADE"))
    chunk_id: Mapped[int] = mapped_column(sa.ForeignKey("chunk.id", ondelete="CASCADE"))
    judge_id: Mapped[int] = mapped_column(sa.ForeignKey("judge.id", ondelete="CASCADE"))
    prompt_sha256: Mapped[str] = mapped_column(sa.ForeignKey("prompt_version.sha256"))
    model: Mapped[str] = mapped_column(sa.String(200))
    # labeled (grade set), unparsed (answer without a readable grade), failed (no answer)
    status: Mapped[str] = mapped_column(sa.String(16))
    grade: Mapped[int | None]
    raw_answer: Mapped[str] = mapped_column(sa.Text, default="")
    error: Mapped[str] = mapped_column(sa.Text, default="")
    latency_ms: Mapped[int] = mapped_column(default=0)
    prompt_tokens: Mapped[int] = mapped_column(default=0)
    completion_tokens: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    # An ensemble's answer only: highest minus lowest member grade (the pair's uncertainty).
    spread: Mapped[int | None]

    __table_args__ = (
        sa.UniqueConstraint("query_id", "chunk_id", "judge_id", "prompt_sha256"),
        sa.Index("ix_machine_judgment_judge_id_test_set_id", "judge_id", "test_set_id"),
        sa.CheckConstraint(
            "(status = 'labeled' AND grade IS NOT NULL) OR (status <> 'labeled' AND grade IS NULL)",
            name="grade_matches_status",
        ),
    )


class AuditSample(db.Model):
    """A judge's audit sample on a test set: queries drawn at random for people to grade.

    The draw is a seeded permutation of the set's qids in byte order (services/judges/audit.py);
    the drawn queries are kept in draw order (AuditSampleQuery) so that a larger N extends
    the same sample instead of drawing a new one.
    """

    __tablename__ = "audit_sample"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(sa.ForeignKey("test_set.id", ondelete="CASCADE"))
    judge_id: Mapped[int] = mapped_column(sa.ForeignKey("judge.id", ondelete="CASCADE"), index=True)
    # Seeds are 0 ≤ seed < 2**63 (a signed 64-bit column on both databases).
    seed: Mapped[int] = mapped_column(sa.BigInteger)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        sa.DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )

    __table_args__ = (sa.UniqueConstraint("test_set_id", "judge_id"),)


class AuditSampleQuery(db.Model):
    """One drawn query of an audit sample, at its place in the draw (0 first)."""

    __tablename__ = "audit_sample_query"

    sample_id: Mapped[int] = mapped_column(
        sa.ForeignKey("audit_sample.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(primary_key=True)
    query_id: Mapped[int] = mapped_column(sa.ForeignKey("query.id", ondelete="CASCADE"), index=True)

    __table_args__ = (sa.UniqueConstraint("sample_id", "query_id"),)


class MachineConflict(db.Model):
    """A person's grade two or more steps from a machine grade of the same pair: an item of
    the admins' "machine vs people" queue until someone resolves it."""

    __tablename__ = "machine_conflict"

    id: Mapped[int] = mapped_column(primary_key=True)
    test_set_id: Mapped[int] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    query_id: Mapped[int] = mapped_column(sa.ForeignKey("query.id", ondelete="CASCADE"))
    chunk_id: Mapped[int] = mapped_column(sa.ForeignKey("chunk.id", ondelete="CASCADE"))
    judge_id: Mapped[int] = mapped_column(sa.ForeignKey("judge.id", ondelete="CASCADE"))
    annotator_id: Mapped[int | None] = mapped_column(sa.ForeignKey("user.id", ondelete="SET NULL"))
    machine_grade: Mapped[int]
    human_grade: Mapped[int]
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    resolved_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    resolved_by_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("user.id", ondelete="SET NULL")
    )
    # How it was resolved: "people" (the person was right), "machine", or "" while open.
    resolution: Mapped[str] = mapped_column(sa.String(16), default="", server_default="")

    __table_args__ = (sa.UniqueConstraint("query_id", "chunk_id", "judge_id", "annotator_id"),)
