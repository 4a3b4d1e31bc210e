"""Column helpers shared by the models."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Timezone-aware now, stored as UTC."""
    return datetime.now(UTC)


def aware(moment: datetime | None) -> datetime | None:
    """A stored time as UTC-aware: SQLite hands back naive datetimes, which were stored as
    UTC; PostgreSQL's aware ones are kept as they are."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def iso_utc(moment: datetime | None, timespec: str = "auto") -> str | None:
    """A stored time in ISO 8601 with its UTC offset, the same text on both databases."""
    moment = aware(moment)
    return None if moment is None else moment.astimezone(UTC).isoformat(timespec=timespec)
