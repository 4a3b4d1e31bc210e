"""Column helpers shared by the models."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Timezone-aware now, stored as UTC."""
    return datetime.now(UTC)
