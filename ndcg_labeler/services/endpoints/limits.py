"""How an endpoint is asked: concurrency, requests per minute and timeout, read and checked.

One sentence per limit says its range, whether the value is out of it or not a number at all,
so the form and the command line refuse a value in the same words.
"""

from __future__ import annotations

import math

from ndcg_labeler.services import MAX_WHOLE, read_number, shown

# How an endpoint is asked, unless its admin says otherwise (the CLI's and the form's defaults).
DEFAULT_CONCURRENCY = 4
DEFAULT_RPM = 0  # no limit
DEFAULT_TIMEOUT = 30.0
MAX_CONCURRENCY = 64
MAX_TIMEOUT = 600.0

# Each limit's range, as every refusal of it begins ("…, not 0" or "…, not 'four'").
RANGES = {
    "concurrency": f"concurrency must be a whole number from 1 to {MAX_CONCURRENCY}",
    # At most the largest INTEGER of PostgreSQL, where it is stored.
    "requests_per_minute": (
        f"requests per minute must be a whole number from 0 (no limit) to {MAX_WHOLE}"
    ),
    "timeout": f"the timeout must be more than 0 and at most {MAX_TIMEOUT:g} s",
}


def _read(name: str, typed: str | float) -> int | float | str:
    """The limit as a number, or the text as typed when it is not one: read as the judge
    settings are (services.read_number: plain decimals, no '1e3', 'inf' or 'nan')."""
    value = read_number(typed, whole=name != "timeout")
    return float(value) if name == "timeout" and isinstance(value, int) else value


def _in_range(name: str, value: float) -> bool:
    """True when the number is within the limit's range (a whole number where it must be)."""
    if not math.isfinite(value):
        return False
    if name == "concurrency":
        return value == int(value) and 1 <= value <= MAX_CONCURRENCY
    if name == "requests_per_minute":
        return value == int(value) and 0 <= value <= MAX_WHOLE
    return 0 < value <= MAX_TIMEOUT


def read_limits(
    concurrency: str | float, requests_per_minute: str | float, timeout: str | float
) -> tuple[dict[str, int | float], dict[str, str]]:
    """The limits (numbers, or text as typed in a form or on the command line) as numbers, and
    what is wrong with each, by name ("concurrency", "requests_per_minute", "timeout"): the
    limit's range and the value given, the same for a number out of range and for a text that
    is no number. Only the limits without a fault are in the first dict."""
    given = {
        "concurrency": concurrency,
        "requests_per_minute": requests_per_minute,
        "timeout": timeout,
    }
    values: dict[str, int | float] = {}
    wrong: dict[str, str] = {}
    for name, typed in given.items():
        value = _read(name, typed)
        if isinstance(value, str) or not _in_range(name, value):
            wrong[name] = f"{RANGES[name]}, not {shown(value)}"
        else:
            values[name] = value
    return values, wrong


def limit_errors(
    concurrency: str | float, requests_per_minute: str | float, timeout: str | float
) -> dict[str, str]:
    """What is wrong with how an endpoint is to be asked, by setting (read_limits' second
    dict); empty when nothing is. The CLI and the form both say it."""
    return read_limits(concurrency, requests_per_minute, timeout)[1]
