"""Read chunks to judge: BEIR corpus.jsonl or CSV/TSV with header docid,text[,title]."""

from __future__ import annotations

import json
import re
from collections.abc import Container, Iterator
from typing import Any

from .errors import FormatError
from .fields import check_id, json_id, json_text
from .records import ChunkRecord
from .tabular import check_width, iter_csv_rows, iter_json_objects, read_header, sniff_delimiter
from .textio import (
    DEFAULT_MAX_BYTES,
    Opened,
    Source,
    first_line,
    iter_lines,
    line_blocks,
    open_source,
)

CORPUS_FORMATS = ("jsonl", "csv", "tsv")
_JSON_KEYS = ("_id", "docid", "title", "text", "metadata")


def read_corpus_numbered(
    source: Source,
    filename: str | None = None,
    *,
    fmt: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    check_duplicates: bool = True,
) -> Iterator[tuple[int, ChunkRecord]]:
    """Like read_corpus, but yield `(line_no, record)` (a record's first line).

    `check_duplicates=False` leaves the duplicate-docid check to the caller: the check keeps
    every docid in memory, which a corpus of millions of chunks cannot afford (the import
    checks in the database instead).
    """
    if fmt is not None and fmt not in CORPUS_FORMATS:
        raise ValueError(f"fmt must be one of {CORPUS_FORMATS}, not {fmt!r}")
    with open_source(source, filename, max_bytes=max_bytes) as opened:
        name = opened.filename
        first = first_line(opened.head)
        if first is None:
            raise FormatError(name, None, "file is empty")
        kind = fmt or ("jsonl" if first.startswith("{") else sniff_delimiter(first))
        records = _jsonl(opened) if kind == "jsonl" else _delimited(opened, kind)
        seen: dict[str, int] = {}
        for line_no, record in records:
            first_at = seen.setdefault(record.docid, line_no) if check_duplicates else line_no
            if first_at != line_no:
                reason = f"docid '{record.docid}' appears twice (first at line {first_at})"
                raise FormatError(name, line_no, reason)
            if not record.text.strip() and not record.title:
                raise FormatError(name, line_no, f"chunk {record.docid} has neither text nor title")
            yield line_no, record


def read_corpus(
    source: Source,
    filename: str | None = None,
    *,
    fmt: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[ChunkRecord]:
    """Yield the chunks of a corpus file; a duplicate docid or a chunk without text is an error."""
    for _, record in read_corpus_numbered(source, filename, fmt=fmt, max_bytes=max_bytes):
        yield record


def _title(value: str | None) -> str | None:
    value = value.strip() if value is not None else None
    return value or None


def _jsonl(opened: Opened) -> Iterator[tuple[int, ChunkRecord]]:
    name = opened.filename
    for line_no, obj in iter_json_objects(iter_lines(opened), name):
        yield line_no, _json_record(obj, name, line_no)


def _json_record(obj: dict[str, Any], name: str, line_no: int) -> ChunkRecord:
    """One corpus.jsonl object as a chunk."""
    docid = json_id(obj, ("_id", "docid"), name, line_no)
    # A title-only chunk may leave "text" out (or null): read_corpus_numbered refuses a chunk
    # with neither, as the docs say ("a chunk needs a text or a title").
    text = json_text(obj, "text", name, line_no, required=False) or ""
    title = json_text(obj, "title", name, line_no, required=False)
    meta = obj.get("metadata")
    if meta is None:
        meta = {}
    elif not isinstance(meta, dict):
        kind = type(meta).__name__
        raise FormatError(name, line_no, f'"metadata" must be an object, not {kind}')
    extra: dict[str, Any] = {k: v for k, v in obj.items() if k not in _JSON_KEYS}
    return ChunkRecord(docid, _title(title), text, {**extra, **meta})


# Every string or integer value of an "_id" or "docid" key, anywhere in a line: a superset of
# the lines' ids (a nested key matches too; a quote inside a JSON string is always escaped, so
# text cannot fake the pattern's unescaped quotes). A key spelled with escapes ("\u005fid")
# would be missed: no writer of corpora does that.
_ID_VALUES = re.compile(rb'"(?:_id|docid)"\s*:\s*(?:"((?:[^"\\\n]|\\[^\n])*)"|(-?\d+))')


def pick_corpus(
    source: Source,
    filename: str | None,
    wanted: Container[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[tuple[int, ChunkRecord]]:
    """`(line_no, record)` of the chunks whose docid is in `wanted`, for a file read whole
    before (no line is checked again, repeats included).

    corpus.jsonl is searched a block at a time for its id values (one regular expression over
    the bytes) and only the lines naming a wanted id are parsed: ~10x faster than parsing
    every line, for fetching a few chunks from a corpus of millions. CSV/TSV are parsed whole.
    """
    with open_source(source, filename, max_bytes=max_bytes) as opened:
        name = opened.filename
        first = first_line(opened.head)
        if first is None:
            return
        if not first.startswith("{"):
            for line_no, record in _delimited(opened, sniff_delimiter(first)):
                if record.docid in wanted:
                    yield line_no, record
            return
        for before, block in line_blocks(opened):
            line_no, counted, last = before + 1, 0, -1
            for match in _ID_VALUES.finditer(block):
                value = match.group(1)
                if value is None:
                    docid = match.group(2).decode()
                elif b"\\" in value:
                    try:
                        docid = json.loads(b'"' + value + b'"')
                    except ValueError:
                        continue  # not a JSON string: not an id
                else:
                    docid = value.decode()
                if docid not in wanted:
                    continue
                start = block.rfind(b"\n", 0, match.start()) + 1
                line_no += block.count(b"\n", counted, start)
                counted = start
                if start == last:
                    continue  # this line's other id value: the line is parsed once
                last = start
                end = block.find(b"\n", start)
                line = block[start : end if end >= 0 else len(block)].rstrip(b"\r")
                for _, obj in iter_json_objects([(line_no, line.decode())], name):
                    record = _json_record(obj, name, line_no)
                    if record.docid in wanted:
                        yield line_no, record


def _delimited(opened: Opened, kind: str) -> Iterator[tuple[int, ChunkRecord]]:
    name = opened.filename
    delimiter = {"csv": ",", "tsv": "\t"}.get(kind, kind)
    rows = iter_csv_rows(iter_lines(opened, keepends=True), name, delimiter)
    cols = read_header(rows, name, required=("docid", "text"), optional=("title",), extra_ok=True)
    d, t, ti = cols["docid"], cols["text"], cols.get("title")
    extra = {col: pos for col, pos in cols.items() if col not in ("docid", "text", "title")}
    for line_no, row in rows:
        check_width(row, len(cols), name, line_no)
        docid = check_id(row[d], "docid", name, line_no)
        title = _title(row[ti]) if ti is not None else None
        meta = {col: row[pos] for col, pos in extra.items()}
        yield line_no, ChunkRecord(docid, title, row[t], meta)
