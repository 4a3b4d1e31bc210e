"""Read relevance judgments: TREC qrels (qid iter docid grade) or BEIR qrels TSV with header."""

from __future__ import annotations

from collections.abc import Iterator

from .errors import FormatError
from .fields import check_id, hash_hint, parse_grade, split_ws, width_error
from .records import QrelRecord
from .textio import DEFAULT_MAX_BYTES, Opened, Source, first_line, iter_lines, open_source

QREL_FORMATS = ("trec", "beir")
BEIR_HEADER = ("query-id", "corpus-id", "score")


def detect_qrels_format(first: str | None, filename: str) -> str:
    """Pick trec (4 columns) or beir (header query-id, corpus-id, score) from the first line."""
    if first is None:
        raise FormatError(filename, None, "file is empty")
    tokens = split_ws(first)  # first line not starting with '#'; see first_line
    if tuple(t.lower() for t in tokens) == BEIR_HEADER:
        return "beir"
    if len(tokens) == 4:
        return "trec"
    reason = (
        "cannot tell the format: expected TREC qrels (qid iter docid grade) "
        "or BEIR qrels with header 'query-id<TAB>corpus-id<TAB>score'"
    )
    raise FormatError(filename, None, reason)


def read_qrels_numbered(
    source: Source,
    filename: str | None = None,
    *,
    fmt: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[tuple[int, QrelRecord]]:
    """Like read_qrels, but yield `(line_no, record)` (a record's first line)."""
    if fmt is not None and fmt not in QREL_FORMATS:
        raise ValueError(f"fmt must be one of {QREL_FORMATS}, not {fmt!r}")
    with open_source(source, filename, max_bytes=max_bytes) as opened:
        name = opened.filename
        kind = fmt or detect_qrels_format(first_line(opened.head, skip_hash=True), name)
        records = _trec(opened) if kind == "trec" else _beir(opened)
        seen: dict[tuple[str, str], tuple[int, int]] = {}
        for line_no, record in records:
            key = (record.qid, record.docid)
            earlier = seen.get(key)
            if earlier is None:
                seen[key] = (record.grade, line_no)
                yield line_no, record
            elif earlier[0] != record.grade:
                reason = (
                    f"docid '{record.docid}' is judged twice for query {record.qid} with "
                    f"different grades ({earlier[0]} at line {earlier[1]}, {record.grade} here)"
                )
                raise FormatError(name, line_no, reason)


def read_qrels(
    source: Source,
    filename: str | None = None,
    *,
    fmt: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[QrelRecord]:
    """Yield judgments; an identical repeat is skipped, a conflicting grade is an error."""
    for _, record in read_qrels_numbered(source, filename, fmt=fmt, max_bytes=max_bytes):
        yield record


def _trec(opened: Opened) -> Iterator[tuple[int, QrelRecord]]:
    name = opened.filename
    for line_no, line in iter_lines(opened):
        tokens = split_ws(line)
        if not tokens:
            continue
        if len(tokens) != 4:
            raise width_error(tokens, "4 columns (qid iter docid grade)", name, line_no)
        qid, _, docid, grade = tokens
        try:
            value = parse_grade(grade, name, line_no)
        except FormatError as exc:
            raise hash_hint(exc, tokens) from None
        yield line_no, QrelRecord(qid, docid, value)


def _beir(opened: Opened) -> Iterator[tuple[int, QrelRecord]]:
    name = opened.filename
    header_seen = False
    for line_no, line in iter_lines(opened):
        if not line.strip():
            continue
        fields = line.split("\t")
        if not header_seen:
            header_seen = True
            if tuple(f.strip().lower() for f in fields) == BEIR_HEADER:
                continue
        if len(fields) != 3:
            reason = f"expected 3 columns (query-id<TAB>corpus-id<TAB>score), found {len(fields)}"
            raise FormatError(name, line_no, reason)
        qid = check_id(fields[0], "query-id", name, line_no)
        docid = check_id(fields[1], "corpus-id", name, line_no)
        yield line_no, QrelRecord(qid, docid, parse_grade(fields[2].strip(), name, line_no))
