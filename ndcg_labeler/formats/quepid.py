"""Quepid's CSV files: judgments (query,docid,rating) and a case's snapshot export.

Shapes as Quepid writes them (its export of ratings and of snapshots):
- judgments: header ``query,docid,rating`` (``doc_id`` is read too); a query without ratings is a
  row with only its text; a text starting like a formula is written with a leading space;
- snapshot: header ``Snapshot Name,Snapshot Time,Case ID,Query Text,Doc ID,Doc Position`` and
  then one column per document field shown, one row per document in rank order.

Queries are named by their text: the caller maps texts to qids.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from .errors import FormatError
from .fields import check_id, parse_rank, parse_score
from .tabular import iter_csv_rows, read_header
from .textio import DEFAULT_MAX_BYTES, Source, iter_lines, open_source

SNAPSHOT_HEADER = (
    "Snapshot Name",
    "Snapshot Time",
    "Case ID",
    "Query Text",
    "Doc ID",
    "Doc Position",
)
# Quepid's own CSV-injection guard: a leading space before these (we strip it when reading).
_FORMULA_START = ("-", "=", "+", "@")


class TextJudgment(NamedTuple):
    """One rating of a query named by its text; docid and rating None for a query alone."""

    query: str
    docid: str | None
    rating: float | None


class SnapshotRow(NamedTuple):
    """One document of a snapshot: the query's text, the docid and its position from 1."""

    query: str
    docid: str
    position: int


def clean_text(text: str) -> str:
    """A query text with its whitespace runs folded: how texts are compared and stored."""
    return " ".join(text.split())


def read_quepid_judgments(
    source: Source, filename: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[tuple[int, TextJudgment]]:
    """Yield `(line, judgment)` of a Quepid judgments CSV; two ratings of a pair must agree."""
    with open_source(source, filename, max_bytes=max_bytes) as opened:
        name = opened.filename
        rows = iter_csv_rows(iter_lines(opened, keepends=True), name, ",")
        cols = read_header(rows, name, required=("query",), optional=("docid", "doc_id", "rating"))
        d = cols.get("docid", cols.get("doc_id"))
        r = cols.get("rating")
        if d is None or r is None:
            reason = "header lacks column 'docid' or 'rating' (expected query, docid, rating)"
            raise FormatError(name, 1, reason)
        q = cols["query"]
        seen: dict[tuple[str, str], tuple[float | None, int]] = {}
        for line, row in rows:
            row = row + [""] * (len(cols) - len(row))  # Quepid pads; be lenient with short rows
            if len(row) > len(cols):
                raise FormatError(name, line, f"expected {len(cols)} columns, found {len(row)}")
            text = clean_text(row[q])
            if not text:
                raise FormatError(name, line, "empty query text")
            docid_text, rating_text = row[d].strip(), row[r].strip()
            if not docid_text:
                if rating_text:
                    raise FormatError(name, line, "a rating without a docid")
                yield line, TextJudgment(text, None, None)
                continue
            docid = check_id(docid_text, "docid", name, line)
            rating = parse_score(rating_text, name, line, "rating") if rating_text else None
            # An unrated row lists the pair without a rating: only two ratings can disagree.
            earlier = seen.get((text, docid))
            if earlier is None or earlier[0] is None:
                seen[(text, docid)] = (rating, line)
            elif rating is not None and earlier[0] != rating:
                reason = (
                    f"docid '{docid}' is rated twice for query '{text[:60]}' with different "
                    f"ratings (line {earlier[1]} and here)"
                )
                raise FormatError(name, line, reason)
            yield line, TextJudgment(text, docid, rating)


def read_quepid_snapshot(
    source: Source, filename: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[tuple[int, SnapshotRow]]:
    """Yield `(line, row)` of a Quepid snapshot CSV; a position or docid repeated within a query
    is an error (the file would not be one ranking)."""
    with open_source(source, filename, max_bytes=max_bytes) as opened:
        name = opened.filename
        rows = iter_csv_rows(iter_lines(opened, keepends=True), name, ",")
        cols = read_header(
            rows, name, required=("query text", "doc id", "doc position"), extra_ok=True
        )
        q, d, p = cols["query text"], cols["doc id"], cols["doc position"]
        width = max(cols.values()) + 1
        positions: set[tuple[str, int]] = set()
        docids: set[tuple[str, str]] = set()
        for line, row in rows:
            if len(row) < width:
                raise FormatError(
                    name, line, f"expected at least {width} columns, found {len(row)}"
                )
            text = clean_text(row[q])
            if not text:
                raise FormatError(name, line, "empty query text")
            docid = check_id(row[d], "docid", name, line)
            position = parse_rank(row[p].strip(), name, line)
            if position < 1:
                raise FormatError(name, line, "doc position must be 1 or more")
            if (text, position) in positions:
                raise FormatError(
                    name, line, f"position {position} appears twice for query '{text[:60]}'"
                )
            if (text, docid) in docids:
                raise FormatError(
                    name, line, f"docid '{docid}' appears twice for query '{text[:60]}'"
                )
            positions.add((text, position))
            docids.add((text, docid))
            yield line, SnapshotRow(text, docid, position)


def _quepid_safe(text: str) -> str:
    """Quepid's guard against spreadsheet formulas: a leading space (stripped on reading)."""
    return " " + text if text.startswith(_FORMULA_START) else text


def write_quepid_judgments(rows: Iterable[tuple[str, str | None, int | float | None]]) -> str:
    """Quepid's judgments CSV: header query,docid,rating; (text, None, None) for a query alone."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["query", "docid", "rating"])
    for text, docid, rating in rows:
        writer.writerow(
            [_quepid_safe(text), _quepid_safe(docid or ""), "" if rating is None else rating]
        )
    return out.getvalue()


def write_quepid_snapshot(
    name: str, time: str, case_id: str, rows: Iterable[tuple[str, str, int]]
) -> str:
    """A snapshot CSV Quepid imports: (query text, docid, position) rows in rank order."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SNAPSHOT_HEADER)
    for text, docid, position in rows:
        writer.writerow(
            [_quepid_safe(name), time, case_id, _quepid_safe(text), _quepid_safe(docid), position]
        )
    return out.getvalue()
