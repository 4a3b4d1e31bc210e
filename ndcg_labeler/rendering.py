"""Rendering helpers of the templates: Markdown, query-term highlighting and times in UTC."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from markupsafe import Markup, escape


@lru_cache(maxsize=1)
def _markdown() -> Any:
    """The Markdown renderer, built on first use (not at start-up)."""
    from markdown_it import MarkdownIt

    # html=False makes markdown-it escape raw HTML; its link validator drops javascript: URLs.
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "do",
        "does",
        "can",
        "my",
        "our",
        "your",
    }
)


def render_markdown(text: str | None) -> Markup:
    """Render Markdown to HTML with raw HTML escaped (safe for untrusted guidelines)."""
    return Markup(_markdown().render(text or ""))


def query_terms(query: str) -> list[str]:
    """The words of a query worth highlighting (no stopwords, no one-letter words)."""
    words = re.findall(r"\w+", query.lower())
    return sorted({w for w in words if len(w) > 1 and w not in _STOPWORDS}, key=len, reverse=True)


def highlight_terms(text: str | None, query: str) -> Markup:
    """Escape `text` and wrap words starting with a query term in <mark> (safe for any input)."""
    raw = text or ""
    terms = query_terms(query)
    if not terms:
        return Markup(escape(raw))
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")\w*", re.IGNORECASE)
    parts: list[str] = []
    last = 0
    # Escape the pieces separately so a match can never split an HTML entity.
    for match in pattern.finditer(raw):
        parts.append(str(escape(raw[last : match.start()])))
        parts.append(f"<mark>{escape(match.group(0))}</mark>")
        last = match.end()
    parts.append(str(escape(raw[last:])))
    return Markup("".join(parts))


def utc_time(value: datetime | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """A stored time as UTC text, marked "UTC" whenever it shows a time of day.

    Every page shows times through this one filter (`{{ x | utc }}`), so none is ever read as
    local time. Times are stored in UTC; SQLite hands them back naive, PostgreSQL aware.
    """
    if value is None:
        return ""
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    text = value.strftime(fmt)
    # A date alone is a UTC day too, but "2026-01-02 UTC" reads oddly in a column of dates.
    return f"{text} UTC" if "%H" in fmt else text
