"""The audit trail: one row per admin action (who, when, what, on which object, details)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from ndcg_labeler.extensions import db
from ndcg_labeler.models._common import utcnow


class AuditEvent(db.Model):
    """An admin action, written in the same transaction as the action itself.

    `actor_name` keeps the name as it was (and "cli" for the command line, which has no user);
    the target is named by type and id, plus a readable label in `details`.
    """

    __tablename__ = "audit_event"

    id: Mapped[int] = mapped_column(primary_key=True)
    created_at: Mapped[datetime] = mapped_column(
        sa.DateTime(timezone=True), default=utcnow, index=True
    )
    actor_id: Mapped[int | None] = mapped_column(
        sa.ForeignKey("user.id", ondelete="SET NULL"), index=True
    )
    actor_name: Mapped[str] = mapped_column(sa.String(80))
    action: Mapped[str] = mapped_column(sa.String(40))
    target_type: Mapped[str] = mapped_column(sa.String(40))
    target_id: Mapped[int | None]
    details: Mapped[dict[str, Any]] = mapped_column(sa.JSON, default=dict)

    # /audit's filters, newest first with no sort: one action's or one actor's events (a year
    # of sign-ins is hundreds of thousands of rows), and the actor menu's distinct names.
    __table_args__ = (
        sa.Index("ix_audit_event_action_created_at", "action", "created_at", "id"),
        sa.Index("ix_audit_event_actor_name_created_at", "actor_name", "created_at", "id"),
    )
