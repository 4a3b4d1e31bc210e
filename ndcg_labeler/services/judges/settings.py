"""A judge's numeric settings read and checked: temperature, max tokens, timeout, concurrency,
requests per minute and few-shot examples.

One sentence per setting says its range, whether the value is out of it or not a number at all,
so the judge form and `flask judges add` refuse a value in the same words.
"""

from __future__ import annotations

import math
from typing import Any

from ndcg_labeler.services import read_number, shown

DEFAULT_MAX_TOKENS = 512  # tokens a judge may generate per answer, unless told otherwise
# The largest settings add_judge accepts (the form's and the CLI's ranges).
MAX_TOKENS = 100_000
MAX_CONCURRENCY = 64  # requests in flight
MAX_TIMEOUT = 600  # seconds per request
MAX_RPM = 100_000  # requests per minute (stored as an INTEGER)
MAX_FEW_SHOT = 20  # examples in one prompt: ensembles.MAX_FEW_SHOT (a test keeps them equal)
# Each setting as a judge has it unless told otherwise (the form's and the CLI's defaults).
DEFAULTS: dict[str, int | float] = {
    "temperature": 0.0,
    "max_tokens": DEFAULT_MAX_TOKENS,
    "timeout": 60.0,
    "concurrency": 8,
    "requests_per_minute": 0,
    "few_shot": 0,
}
# Each setting's range, as every refusal of it begins ("…, not 0" or "…, not 'four'").
RANGES = {
    "temperature": "the temperature must be a number from 0 to 2",
    "max_tokens": f"max tokens must be a whole number from 1 to {MAX_TOKENS}",
    "timeout": f"the timeout must be more than 0 and at most {MAX_TIMEOUT} s",
    "concurrency": f"concurrency must be a whole number from 1 to {MAX_CONCURRENCY}",
    "requests_per_minute": (
        f"requests per minute must be a whole number from 0 (no limit) to {MAX_RPM}"
    ),
    "few_shot": f"few-shot examples must be a whole number from 0 to {MAX_FEW_SHOT}",
}
_WHOLE_SETTINGS = ("max_tokens", "concurrency", "requests_per_minute", "few_shot")


def _in_range(name: str, value: float) -> bool:
    """True when the number is within the setting's range (a whole number where it must be)."""
    if isinstance(value, bool) or not math.isfinite(value):
        return False
    if name in _WHOLE_SETTINGS and value != int(value):
        return False
    low, high = {
        "temperature": (0, 2),
        "max_tokens": (1, MAX_TOKENS),
        "concurrency": (1, MAX_CONCURRENCY),
        "requests_per_minute": (0, MAX_RPM),
        "few_shot": (0, MAX_FEW_SHOT),
    }.get(name, (0, MAX_TIMEOUT))
    if name == "timeout":
        return low < value <= high
    return low <= value <= high


def read_settings(**given: Any) -> tuple[dict[str, int | float], dict[str, str]]:
    """The settings given by name (numbers, or text as typed in the form or on the command
    line; None or empty text: the default) as numbers, and what is wrong with each, by name:
    the setting's range and the value given. Only the settings without a fault are in the
    first dict; the others given are in the second."""
    values: dict[str, int | float] = {}
    wrong: dict[str, str] = {}
    for name, typed in given.items():
        if typed is None or (isinstance(typed, str) and not typed.strip()):
            values[name] = DEFAULTS[name]
            continue
        value = read_number(typed, whole=name in _WHOLE_SETTINGS)
        if isinstance(value, str) or not _in_range(name, value):
            wrong[name] = f"{RANGES[name]}, not {shown(value)}"
        elif name in _WHOLE_SETTINGS:
            values[name] = int(value)
        else:
            values[name] = float(value)
    return values, wrong
