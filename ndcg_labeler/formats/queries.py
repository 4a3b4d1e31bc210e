"""Read test queries: BEIR queries.jsonl, TREC topics TSV or CSV qid,text[,narrative]."""

from __future__ import annotations

from collections.abc import Iterator

from .errors import FormatError
from .fields import check_id, json_id, json_text
from .records import QueryRecord
from .tabular import check_width, header_names, iter_csv_rows, iter_json_objects, read_header
from .textio import DEFAULT_MAX_BYTES, Opened, Source, first_line, iter_lines, open_source

QUERY_FORMATS = ("jsonl", "tsv", "csv")


def detect_queries_format(first: str | None, filename: str) -> str:
    """Pick jsonl, csv or tsv from the first non-blank line of a queries file."""
    if first is None:
        raise FormatError(filename, None, "file is empty")
    if first.startswith("{"):
        return "jsonl"
    header = header_names(first, ",")
    if "qid" in header and "text" in header:
        return "csv"
    if "\t" in first:
        return "tsv"
    reason = (
        'cannot tell the format: expected JSON lines ({"_id", "text"}), '
        "a CSV header 'qid,text[,narrative]' or TSV lines 'qid<TAB>text'"
    )
    raise FormatError(filename, None, reason)


def read_queries_numbered(
    source: Source,
    filename: str | None = None,
    *,
    fmt: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[tuple[int, QueryRecord]]:
    """Like read_queries, but yield `(line_no, record)` (a record's first line)."""
    if fmt is not None and fmt not in QUERY_FORMATS:
        raise ValueError(f"fmt must be one of {QUERY_FORMATS}, not {fmt!r}")
    with open_source(source, filename, max_bytes=max_bytes) as opened:
        name = opened.filename
        kind = fmt or detect_queries_format(first_line(opened.head), name)
        parse = {"jsonl": _jsonl, "tsv": _tsv, "csv": _csv}[kind]
        seen: dict[str, int] = {}
        for line_no, record in parse(opened):
            first = seen.setdefault(record.qid, line_no)
            if first != line_no:
                reason = f"qid '{record.qid}' appears twice (first at line {first})"
                raise FormatError(name, line_no, reason)
            if not record.text.strip():
                raise FormatError(name, line_no, f"query {record.qid} has empty text")
            yield line_no, record


def read_queries(
    source: Source,
    filename: str | None = None,
    *,
    fmt: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[QueryRecord]:
    """Yield the queries of a file; duplicate qids and empty texts are errors."""
    for _, record in read_queries_numbered(source, filename, fmt=fmt, max_bytes=max_bytes):
        yield record


def _narrative(value: str | None) -> str | None:
    value = value.strip() if value is not None else None
    return value or None


def _jsonl(opened: Opened) -> Iterator[tuple[int, QueryRecord]]:
    name = opened.filename
    for line_no, obj in iter_json_objects(iter_lines(opened), name):
        qid = json_id(obj, ("_id", "qid"), name, line_no)
        text = json_text(obj, "text", name, line_no, required=True) or ""
        narrative = json_text(obj, "narrative", name, line_no, required=False)
        yield line_no, QueryRecord(qid, text.strip(), _narrative(narrative))


def _tsv(opened: Opened) -> Iterator[tuple[int, QueryRecord]]:
    name = opened.filename
    first = True
    for line_no, line in iter_lines(opened):
        if not line.strip():
            continue
        fields = line.split("\t")
        if first and [f.strip().lower() for f in fields[:2]] == ["qid", "text"]:
            first = False
            continue  # an optional header line
        first = False
        if len(fields) not in (2, 3):
            reason = f"expected 2 columns (qid<TAB>text[<TAB>narrative]), found {len(fields)}"
            raise FormatError(name, line_no, reason)
        qid = check_id(fields[0], "qid", name, line_no)
        narrative = _narrative(fields[2]) if len(fields) == 3 else None
        yield line_no, QueryRecord(qid, fields[1].strip(), narrative)


def _csv(opened: Opened) -> Iterator[tuple[int, QueryRecord]]:
    name = opened.filename
    rows = iter_csv_rows(iter_lines(opened, keepends=True), name, ",")
    cols = read_header(rows, name, required=("qid", "text"), optional=("narrative",))
    q, t, n = cols["qid"], cols["text"], cols.get("narrative")
    for line_no, row in rows:
        check_width(row, len(cols), name, line_no)
        qid = check_id(row[q], "qid", name, line_no)
        narrative = _narrative(row[n]) if n is not None else None
        yield line_no, QueryRecord(qid, row[t].strip(), narrative)
