"""CSV cells a spreadsheet will not run: text starting like a formula gets a leading apostrophe."""

from __future__ import annotations

from typing import Any

# Spreadsheet programs run a cell starting with one of these as a formula (CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(text: str) -> str:
    """Defuse text a spreadsheet would run as a formula: prefix it with an apostrophe."""
    return "'" + text if text.startswith(FORMULA_START) else text


def safe_value(value: Any) -> Any:
    """A CSV writer's cell: None empty, text defused (safe_cell), numbers as they are."""
    if value is None:
        return ""
    return safe_cell(value) if isinstance(value, str) else value
