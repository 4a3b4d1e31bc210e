"""Run series: runs over time (trend, significance against the previous run), the series'
baseline, and scheduled evaluations of an endpoint with alerts."""

from .alerts import post_alert, webhook_url
from .catalog import (
    SeriesSummary,
    baseline,
    check_json,
    list_checks,
    list_series,
    pin_baseline,
    pinned_baseline,
    series_runs,
)
from .schedule import Schedule, latest_slot, next_slot, parse_schedule
from .scheduled import Due, claim_due, evaluate, next_run, set_schedule
from .trend import ALPHA, Trend, TrendPoint, trend

__all__ = [
    "ALPHA",
    "Due",
    "Schedule",
    "SeriesSummary",
    "Trend",
    "TrendPoint",
    "baseline",
    "check_json",
    "claim_due",
    "evaluate",
    "latest_slot",
    "list_checks",
    "list_series",
    "next_run",
    "next_slot",
    "parse_schedule",
    "pin_baseline",
    "pinned_baseline",
    "post_alert",
    "series_runs",
    "set_schedule",
    "trend",
    "webhook_url",
]
