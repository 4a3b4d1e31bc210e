"""Schedules of evaluations: "daily HH:MM" or a five-field cron expression, in UTC.

Pure date arithmetic (no database): which slot is the latest at or before a moment, and which
comes next. A slot is a whole minute. Cron fields are minute, hour, day of month, month and day
of week (0 or 7 = Sunday), each `*`, a number, a range `a-b`, a list `a,b` or a step `*/n`,
`a-b/n`; as in cron, when both day fields are restricted a day matching either one counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from ndcg_labeler.services import ServiceError

# Far enough back or ahead for any cron expression (29 February comes every four years).
SEARCH_DAYS = 4 * 366 + 1
_DAILY = re.compile(r"^daily\s+([0-9]{1,2}):([0-9]{2})$", re.IGNORECASE)
_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12))
# The most days each month can have (29 February comes in leap years).
_MONTH_DAYS = {2: 29, 4: 30, 6: 30, 9: 30, 11: 30}


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: the allowed values of each field."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool
    any_weekday: bool

    def day_matches(self, day: date) -> bool:
        """True when the schedule runs on this day (cron's rule for the two day fields)."""
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        in_week = day.isoweekday() % 7 in self.weekdays
        if self.any_day and self.any_weekday:
            return True
        if self.any_day:
            return in_week
        if self.any_weekday:
            return in_month
        return in_month or in_week


def _field(text: str, name: str, low: int, high: int) -> tuple[frozenset[int], bool]:
    """The values of one cron field, and whether it was `*` (unrestricted)."""
    values: set[int] = set()
    for part in text.split(","):
        found = re.fullmatch(r"(\*|[0-9]+(?:-[0-9]+)?)(?:/([0-9]+))?", part)
        if found is None:
            raise ServiceError(f"the {name} field '{text}' is not a cron field")
        base, step_text = found.groups()
        step = int(step_text) if step_text else 1
        if base == "*":
            start, end = low, high
        elif "-" in base:
            start, end = (int(v) for v in base.split("-"))
        else:
            start = int(base)
            end = high if step_text else start
        if step < 1 or not low <= start <= end <= high:
            raise ServiceError(f"the {name} field '{text}' must stay within {low}–{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values), text == "*"


def parse_schedule(text: str) -> Schedule:
    """A schedule from "daily HH:MM" or "MIN HOUR DAY MONTH WEEKDAY"; ServiceError if neither."""
    text = " ".join((text or "").split())
    daily = _DAILY.match(text)
    if daily:
        hour, minute = int(daily.group(1)), int(daily.group(2))
        if hour > 23 or minute > 59:
            raise ServiceError(f"'{text}' is not a time of day (HH:MM, 00:00–23:59)")
        text = f"{minute} {hour} * * *"
    parts = text.split(" ")
    if len(parts) != 5:
        raise ServiceError(
            f"'{text}' is neither 'daily HH:MM' nor a cron expression of five fields "
            "(minute hour day-of-month month day-of-week, in UTC)"
        )
    (minutes, _), (hours, _), (days, any_day), (months, _) = (
        _field(part, name, low, high)
        for part, (name, low, high) in zip(parts[:4], _FIELDS, strict=True)
    )
    weekdays, any_weekday = _field(parts[4], "day of week", 0, 7)
    weekdays = frozenset(0 if v == 7 else v for v in weekdays)
    canonical = f"daily {daily.group(1).zfill(2)}:{daily.group(2)}" if daily else text
    any_weekday = any_weekday or parts[4] == "*"
    if any_weekday and not any(d <= _MONTH_DAYS.get(m, 31) for m in months for d in days):
        # Only the day of month decides, and it names no day of its months (30 February):
        # stored, it would never fire and have no next run to show.
        raise ServiceError(
            f"'{text}' never runs: its months have no day {', '.join(map(str, sorted(days)))}"
        )
    return Schedule(canonical, minutes, hours, days, months, weekdays, any_day, any_weekday)


def _minute(moment: datetime) -> datetime:
    """The moment in UTC, cut to its minute."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).replace(second=0, microsecond=0)


def latest_slot(schedule: Schedule, now: datetime) -> datetime | None:
    """The last minute at or before `now` the schedule names (None: none in four years)."""
    now = _minute(now)
    for back in range(SEARCH_DAYS):
        day = now.date() - timedelta(days=back)
        if not schedule.day_matches(day):
            continue
        for hour in sorted(schedule.hours, reverse=True):
            if back == 0 and hour > now.hour:
                continue
            limit = now.minute if back == 0 and hour == now.hour else 59
            minutes = [m for m in schedule.minutes if m <= limit]
            if minutes:
                return datetime(day.year, day.month, day.day, hour, max(minutes), tzinfo=UTC)
    return None


def next_slot(schedule: Schedule, now: datetime) -> datetime | None:
    """The first minute after `now` the schedule names (None: none in four years)."""
    now = _minute(now)
    for ahead in range(SEARCH_DAYS):
        day = now.date() + timedelta(days=ahead)
        if not schedule.day_matches(day):
            continue
        for hour in sorted(schedule.hours):
            if ahead == 0 and hour < now.hour:
                continue
            floor = now.minute + 1 if ahead == 0 and hour == now.hour else 0
            minutes = [m for m in schedule.minutes if m >= floor]
            if minutes:
                return datetime(day.year, day.month, day.day, hour, min(minutes), tzinfo=UTC)
    return None
