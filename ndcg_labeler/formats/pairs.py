"""Read a judging pool: query–chunk pairs from a TREC run or qid,docid CSV/TSV; duplicates merge."""

from __future__ import annotations

from collections.abc import Iterator

from .errors import FormatError
from .fields import QRELS_NOT_RUN, check_id, looks_like_qrels, split_ws, width_error
from .records import PairRecord
from .tabular import check_width, header_names, iter_csv_rows, read_header
from .textio import DEFAULT_MAX_BYTES, Opened, Source, first_line, iter_lines, open_source

PAIR_FORMATS = ("trec", "csv", "tsv")


def detect_pairs_format(first: str | None, filename: str) -> str:
    """Pick trec (6 columns) or csv/tsv (qid,docid) from the first non-blank line."""
    if first is None:
        raise FormatError(filename, None, "file is empty")
    if len(split_ws(first)) >= 6:  # trec_eval ignores fields after the tag
        return "trec"
    if looks_like_qrels(first):
        raise FormatError(filename, 1, QRELS_NOT_RUN)
    if "\t" in first:
        return "tsv"
    if "," in first:
        return "csv"
    reason = (
        "cannot tell the format: expected a TREC run (qid Q0 docid rank score tag) "
        "or qid,docid pairs (CSV or TSV, header optional)"
    )
    raise FormatError(filename, None, reason)


def read_pairs_numbered(
    source: Source,
    filename: str | None = None,
    *,
    fmt: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[tuple[int, PairRecord]]:
    """Like read_pairs, but yield `(line_no, record)` (a record's first line)."""
    if fmt is not None and fmt not in PAIR_FORMATS:
        raise ValueError(f"fmt must be one of {PAIR_FORMATS}, not {fmt!r}")
    with open_source(source, filename, max_bytes=max_bytes) as opened:
        kind = fmt or detect_pairs_format(first_line(opened.head, skip_hash=True), opened.filename)
        records = _trec(opened) if kind == "trec" else _delimited(opened, kind)
        seen: set[PairRecord] = set()
        for line_no, record in records:
            if record not in seen:
                seen.add(record)
                yield line_no, record


def read_pairs(
    source: Source,
    filename: str | None = None,
    *,
    fmt: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[PairRecord]:
    """Yield each distinct (qid, docid) pair once, in first-seen order."""
    for _, record in read_pairs_numbered(source, filename, fmt=fmt, max_bytes=max_bytes):
        yield record


def _trec(opened: Opened) -> Iterator[tuple[int, PairRecord]]:
    name = opened.filename
    for line_no, line in iter_lines(opened):
        tokens = split_ws(line)
        if not tokens:
            continue
        if len(tokens) < 6:
            raise width_error(tokens, "6 columns (qid Q0 docid rank score tag)", name, line_no)
        yield line_no, PairRecord(tokens[0], tokens[2])


def _delimited(opened: Opened, kind: str) -> Iterator[tuple[int, PairRecord]]:
    name = opened.filename
    first = first_line(opened.head) or ""
    delimiter = "\t" if kind == "tsv" else ","
    rows = iter_csv_rows(iter_lines(opened, keepends=True), name, delimiter)
    header = header_names(first, delimiter)
    has_header = "qid" in header and "docid" in header
    if has_header:
        cols = read_header(rows, name, required=("qid", "docid"), extra_ok=True)
        q, d = cols["qid"], cols["docid"]
    else:
        q, d = 0, 1
    for line_no, row in rows:
        if has_header:
            check_width(row, len(cols), name, line_no)
        elif len(row) != 2:
            sep = "<TAB>" if kind == "tsv" else ","
            reason = f"expected 2 columns (qid{sep}docid), found {len(row)}"
            raise FormatError(name, line_no, reason)
        qid = check_id(row[q], "qid", name, line_no)
        yield line_no, PairRecord(qid, check_id(row[d], "docid", name, line_no))
