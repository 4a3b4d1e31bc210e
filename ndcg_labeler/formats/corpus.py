"""Read chunks to judge: BEIR corpus.jsonl or CSV/TSV with header docid,text[,title]."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .errors import FormatError
from .fields import check_id, json_id, json_text
from .records import ChunkRecord
from .tabular import check_width, iter_csv_rows, iter_json_objects, read_header, sniff_delimiter
from .textio import DEFAULT_MAX_BYTES, Opened, Source, first_line, iter_lines, open_source

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
        docid = json_id(obj, ("_id", "docid"), name, line_no)
        text = json_text(obj, "text", name, line_no, required=True) or ""
        title = json_text(obj, "title", name, line_no, required=False)
        meta = obj.get("metadata")
        if meta is None:
            meta = {}
        elif not isinstance(meta, dict):
            kind = type(meta).__name__
            raise FormatError(name, line_no, f'"metadata" must be an object, not {kind}')
        extra: dict[str, Any] = {k: v for k, v in obj.items() if k not in _JSON_KEYS}
        yield line_no, ChunkRecord(docid, _title(title), text, {**extra, **meta})


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
