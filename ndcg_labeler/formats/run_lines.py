"""Line-by-line run parsing: the reference path, exact errors, and every run format."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

from .errors import FormatError
from .fields import (
    check_id,
    hash_hint,
    json_id,
    json_number,
    parse_rank,
    parse_score,
    width_error,
)
from .tabular import check_width, iter_csv_rows, iter_json_objects, read_header
from .textio import Opened, iter_lines, iter_raw_lines, line_blocks

Entry = tuple[int, str, str | None, float]
"""(line_no, qid, docid, score) of one ranked document; docid None marks an empty ranking."""

_NAN = float("nan")

Grouped = tuple[list[str], np.ndarray, "np.ndarray | pa.Array", np.ndarray, int]
"""(qids, offsets, docids, scores, lines): a run grouped by query, before any depth cut.

docids: an object array of str (line parser) or a pyarrow LargeStringArray (fast path)."""

QidCheck = Callable[[str], "str | None"]
"""Asked about each query id as it is first met: a reason to refuse the file there, or None."""


def collect(entries: Iterator[Entry], filename: str, qid_check: QidCheck | None = None) -> Grouped:
    """Group entries by query in first-seen order; a docid twice in one query is an error, and
    so is a query `qid_check` refuses (at the line that first names it)."""
    by_query: dict[str, tuple[dict[str, int], list[float]]] = {}
    lines = 0
    last_line = 0
    for line_no, qid, docid, score in entries:
        if line_no != last_line:
            lines += 1
            last_line = line_no
        group = by_query.get(qid)
        if group is None:
            _check_qid(qid_check, qid, filename, line_no)
            group = by_query[qid] = ({}, [])
        if docid is None:
            continue
        seen, scores = group
        first = seen.setdefault(docid, line_no)
        if len(seen) == len(scores):  # setdefault added nothing: seen before
            where = f"line {first}" if first != line_no else "this line"
            reason = f"docid '{docid}' appears twice for query {qid} (first at {where})"
            raise FormatError(filename, line_no, reason)
        scores.append(score)
    return _assemble(by_query, lines, filename)


def collect_whitespace(opened: Opened, fmt: str, qid_check: QidCheck | None = None) -> Grouped:
    """Parse a TREC run (qid Q0 docid rank score tag) or MS MARCO run (qid docid rank).

    Columns split on ASCII whitespace exactly as trec_eval splits them (bytes.split() is C's
    isspace); like trec_eval, a TREC line may carry more fields after the tag. One inlined
    loop, because this is also the path for 7M-line files with irregular spacing or errors.
    A query `qid_check` refuses is an error at the line that first names it.
    """
    name = opened.filename
    trec = fmt == "trec"
    width, d_col, s_col = (6, 2, 4) if trec else (3, 1, 2)
    expected = "6 columns (qid Q0 docid rank score tag)"
    if not trec:
        expected = "3 columns (qid<TAB>docid<TAB>rank)"
    by_query: dict[str, tuple[dict[str, int], list[float]]] = {}
    current: bytes | None = None
    seen: dict[str, int] = {}
    scores: list[float] = []
    lines = 0
    for line_no, raw in iter_raw_lines(opened):
        tokens = raw.split()
        if len(tokens) != width:
            if not tokens:
                continue
            if len(tokens) < width or not trec:
                raise width_error([t.decode() for t in tokens], expected, name, line_no)
        lines += 1
        if tokens[0] != current:
            current = tokens[0]
            qid = current.decode()
            if qid not in by_query:
                _check_qid(qid_check, qid, name, line_no)
            seen, scores = by_query.setdefault(qid, ({}, []))
        token = tokens[s_col]
        if trec:
            try:
                value = float(token)  # bytes: non-ASCII digits are rejected, unlike str
            except ValueError:
                value = _NAN
            bad = not math.isfinite(value) or b"_" in token  # NaN, ±inf, 1e309: refused
        else:
            bad = not token.isdigit()
            value = _NAN if bad else -float(int(token))
        if bad:  # the reference parsers word the error
            text = [t.decode() for t in tokens]
            try:
                if trec:
                    value = parse_score(text[s_col], name, line_no)
                else:
                    value = -float(parse_rank(text[s_col], name, line_no))
            except FormatError as exc:
                raise hash_hint(exc, text) from None
        docid = tokens[d_col].decode()
        first = seen.setdefault(docid, line_no)
        if first != line_no:
            qid = current.decode()
            reason = f"docid '{docid}' appears twice for query {qid} (first at line {first})"
            raise FormatError(name, line_no, reason)
        scores.append(value)
    return _assemble(by_query, lines, name)


def _check_qid(qid_check: QidCheck | None, qid: str, filename: str, line_no: int) -> None:
    """Refuse a query the caller's check refuses, at this line."""
    if qid_check is not None and (reason := qid_check(qid)) is not None:
        raise FormatError(filename, line_no, reason)


_BLANK = np.zeros(256, dtype=bool)
_BLANK[list(b" \t\n\v\f\r")] = True  # C's isspace: what bytes.split() splits on


def row_lines(opened: Opened, rows: list[int]) -> list[int]:
    """The line number of each of `rows`, 0-based indexes among the file's non-blank lines
    (the rows of the fast path, which skips blank lines), reading only up to the last."""
    wanted = sorted(set(rows))
    found: dict[int, int] = {}
    seen = 0  # non-blank lines before the block
    for before, block in line_blocks(opened):
        if len(found) == len(wanted):
            break
        nonblank = _nonblank_lines(block)
        for row in wanted[len(found) :]:
            if row >= seen + nonblank.size:
                break
            found[row] = before + int(nonblank[row - seen]) + 1
        seen += nonblank.size
    return [found[row] for row in rows]


def _nonblank_lines(block: bytes) -> np.ndarray:
    """Indexes of the lines of a block of whole lines that hold more than whitespace."""
    data = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(data == 10)
    if not block.endswith(b"\n"):
        ends = np.append(ends, data.size)  # the last line, without its LF
    starts = np.concatenate(([0], ends[:-1] + 1))
    # A line whose first byte is not whitespace holds more; the few others are looked at whole.
    keep = starts < ends
    keep[keep] = ~_BLANK[data[starts[keep]]]
    for i in np.flatnonzero((starts < ends) & ~keep).tolist():
        keep[i] = not block[starts[i] : ends[i]].isspace()
    return np.flatnonzero(keep)


def delimited_entries(opened: Opened, delimiter: str) -> Iterator[Entry]:
    """Entries of a CSV/TSV run with header qid,docid,score or qid,docid,rank (score wins)."""
    name = opened.filename
    rows = iter_csv_rows(iter_lines(opened, keepends=True), name, delimiter)
    cols = read_header(rows, name, required=("qid", "docid"), extra_ok=True)
    if "score" not in cols and "rank" not in cols:
        raise FormatError(name, 1, "header lacks a 'score' or 'rank' column")
    q, d = cols["qid"], cols["docid"]
    s, r = cols.get("score"), cols.get("rank", 0)
    for line_no, row in rows:
        check_width(row, len(cols), name, line_no)
        qid = check_id(row[q], "qid", name, line_no)
        docid = check_id(row[d], "docid", name, line_no)
        if s is not None:
            score = parse_score(row[s].strip(), name, line_no)
        else:
            score = -float(parse_rank(row[r].strip(), name, line_no))
        yield line_no, qid, docid, score


def jsonl_entries(opened: Opened, mode: list[str]) -> Iterator[Entry]:
    """Entries of JSON lines {qid, docid, score} or {qid, ranking: [docid, ...]}.

    The first object fixes the kind; its name ("jsonl-score" or "jsonl-ranking") is appended
    to `mode` for the caller.
    """
    name = opened.filename
    ranking: bool | None = None
    for line_no, obj in iter_json_objects(iter_lines(opened), name):
        if ranking is None:
            ranking = "ranking" in obj
            mode.append("jsonl-ranking" if ranking else "jsonl-score")
        qid = json_id(obj, ("qid",), name, line_no)
        if not ranking:
            if "ranking" in obj:
                raise FormatError(name, line_no, 'unexpected "ranking": line 1 used "docid"')
            docid = json_id(obj, ("docid",), name, line_no)
            yield line_no, qid, docid, json_number(obj, "score", name, line_no)
            continue
        docs = obj.get("ranking")
        if not isinstance(docs, list):
            raise FormatError(name, line_no, '"ranking" must be a list of docids')
        if not docs:
            yield line_no, qid, None, 0.0  # the query was run and retrieved nothing
        for pos, value in enumerate(docs, 1):
            if isinstance(value, bool) or not isinstance(value, str | int):
                kind = type(value).__name__
                reason = f'"ranking" item {pos} must be a docid string, not {kind}'
                raise FormatError(name, line_no, reason)
            yield line_no, qid, check_id(str(value), "docid", name, line_no), -float(pos)


def _assemble(
    by_query: dict[str, tuple[dict[str, int], list[float]]], lines: int, filename: str
) -> Grouped:
    """Turn {qid: ({docid: line}, scores)} into offsets and flat arrays."""
    if lines == 0:
        raise FormatError(filename, None, "the run has no data lines")
    qids = list(by_query)
    counts = [len(by_query[q][1]) for q in qids]
    offsets = np.zeros(len(qids) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    docids = np.empty(int(offsets[-1]), dtype=object)
    scores_out = np.empty(int(offsets[-1]), dtype=np.float64)
    for i, qid in enumerate(qids):
        seen, scores = by_query[qid]
        docids[offsets[i] : offsets[i + 1]] = list(seen)
        scores_out[offsets[i] : offsets[i + 1]] = scores
    return qids, offsets, docids, scores_out, lines
