"""Schedules: "daily HH:MM" and cron expressions, the latest slot at a moment and the next one.

Expected slots are read off a calendar: 2026-11-27 is a Friday, 2026-11-29 a Sunday."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ndcg_labeler.services import ServiceError, series


def at(day: int, hour: int, minute: int = 0, month: int = 11) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


def test_daily_latest_and_next_slot() -> None:
    daily = series.parse_schedule("daily 3:05")
    assert daily.text == "daily 03:05"
    assert series.latest_slot(daily, at(26, 3, 4)) == at(25, 3, 5)
    assert series.latest_slot(daily, at(26, 3, 5)) == at(26, 3, 5)  # the slot's own minute
    assert series.next_slot(daily, at(26, 3, 5)) == at(27, 3, 5)
    assert series.next_slot(daily, at(26, 3, 4)) == at(26, 3, 5)


def test_cron_weekdays_steps_and_the_two_day_fields() -> None:
    office = series.parse_schedule("*/15 9-17 * * 1-5")
    # Sunday noon: the latest slot is Friday 17:45; Friday 17:50 -> next is Monday 09:00.
    assert series.latest_slot(office, at(29, 12)) == at(27, 17, 45)
    assert series.next_slot(office, at(27, 17, 50)) == at(30, 9, 0)
    # Both day fields restricted: the 1st of the month OR a Sunday (cron's rule).
    either = series.parse_schedule("0 6 1 * 0")
    assert series.next_slot(either, at(26, 7)) == at(29, 6)  # Sunday 29th
    assert series.next_slot(either, at(29, 7)) == at(1, 6, month=12)  # Tuesday 1 December
    sunday = series.parse_schedule("30 2 * * 7")  # 7 is Sunday too
    assert series.latest_slot(sunday, at(28, 12)) == at(22, 2, 30)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("daily 24:00", "not a time of day"),
        ("every day", "neither 'daily HH:MM' nor a cron expression"),
        ("61 * * * *", "minute field '61' must stay within 0–59"),
        ("* * * 13 *", "month field"),
        ("a * * * *", "is not a cron field"),
        ("0 0 30 2 *", "never runs: its months have no day 30"),
        ("0 0 31 4,6 *", "never runs: its months have no day 31"),
    ],
)
def test_bad_schedules_say_why(text: str, message: str) -> None:
    with pytest.raises(ServiceError, match=message):
        series.parse_schedule(text)


def test_a_day_that_exists_only_in_leap_years_or_with_a_weekday_is_kept() -> None:
    leap = series.parse_schedule("0 0 29 2 *")
    assert series.next_slot(leap, at(27, 12)) == datetime(2028, 2, 29, tzinfo=UTC)
    # Both day fields restricted: any Monday of February counts, as in cron.
    either = series.parse_schedule("0 0 30 2 1")
    assert series.next_slot(either, at(27, 12)) == datetime(2027, 2, 1, tzinfo=UTC)
