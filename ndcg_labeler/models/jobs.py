"""Background jobs: long imports and uploads run by the job worker, with their progress."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from ndcg_labeler.extensions import db
from ndcg_labeler.models._common import utcnow

JOB_STATES = ("queued", "running", "done", "failed", "cancelled")
FINISHED_STATES = ("done", "failed", "cancelled")


class Job(db.Model):
    """One piece of long work: who started it, where it stands, and what it produced."""

    __tablename__ = "job"

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(sa.String(32))
    test_set_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("test_set.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("user.id", ondelete="SET NULL"), index=True
    )
    state: Mapped[str] = mapped_column(sa.String(16), default="queued", index=True)
    cancel_requested: Mapped[bool] = mapped_column(default=False)
    # Progress of the current phase (parse: bytes, write/store: records) and records handled.
    phase: Mapped[str] = mapped_column(sa.String(32), default="")
    done: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    total: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    rows: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    phase_started_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    heartbeat_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    # host:pid of the worker process running the job (recovery checks it is still alive)
    worker: Mapped[str] = mapped_column(sa.String(120), default="")
    message: Mapped[str] = mapped_column(sa.Text, default="")
    error: Mapped[str] = mapped_column(sa.Text, default="")
    params: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    result: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    # Where the job's spooled files are: "db:<token>" (rows of job_file, see JobFile), or, for
    # a job queued before files went into the database, a folder under instance/uploads/.
    # Removed when the job ends.
    upload_path: Mapped[str] = mapped_column(sa.String(500), default="")

    __table_args__ = (
        sa.CheckConstraint(
            "state IN ('queued', 'running', 'done', 'failed', 'cancelled')", name="state"
        ),
    )


class JobFile(db.Model):
    """One part (≤ 1 MiB) of a file spooled for a job, so that a worker on another machine reads
    it from the database: the parts of (token, field) in `seq` order are the file."""

    __tablename__ = "job_file"

    id: Mapped[int] = mapped_column(primary_key=True)
    # The spool's token (Job.upload_path is "db:<token>"); the job row may not exist yet.
    token: Mapped[str] = mapped_column(sa.String(40))
    field: Mapped[str] = mapped_column(sa.String(32))
    filename: Mapped[str] = mapped_column(sa.String(300))
    seq: Mapped[int] = mapped_column()
    data: Mapped[bytes] = mapped_column(sa.LargeBinary)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True), default=utcnow)

    __table_args__ = (sa.UniqueConstraint("token", "field", "seq"),)
