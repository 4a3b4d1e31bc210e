"""Line-by-line run parsing: the reference path, exact errors, and every run format."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .errors import FormatError
from .fields import (
    check_id,
    hash_hint,
    json_id,
    json_number,
    parse_rank,
    parse_score,
    split_ws,
    width_error,
)
from .tabular import check_width, iter_csv_rows, iter_json_objects, read_header
from .textio import Opened, iter_lines

Entry = tuple[int, str, str | None, float]
"""(line_no, qid, docid, score) of one ranked document; docid None marks an empty ranking."""

Grouped = tuple[list[str], np.ndarray, np.ndarray, np.ndarray, int]
"""(qids, offsets, docids, scores, lines): a run grouped by query, before any depth cut."""


def collect(entries: Iterator[Entry], filename: str) -> Grouped:
    """Group entries by query in first-seen order; a docid twice in one query is an error."""
    by_query: dict[str, tuple[dict[str, int], list[float]]] = {}
    lines = 0
    last_line = 0
    for line_no, qid, docid, score in entries:
        if line_no != last_line:
            lines += 1
            last_line = line_no
        group = by_query.get(qid)
        if group is None:
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


def whitespace_entries(opened: Opened, fmt: str) -> Iterator[Entry]:
    """Entries of a TREC run (qid Q0 docid rank score tag) or MS MARCO run (qid docid rank).

    Like trec_eval, a TREC line may carry more fields after the tag; they are ignored.
    """
    name = opened.filename
    trec = fmt == "trec"
    width = 6 if trec else 3
    expected = (
        "6 columns (qid Q0 docid rank score tag)" if trec else "3 columns (qid<TAB>docid<TAB>rank)"
    )
    for line_no, line in iter_lines(opened):
        tokens = split_ws(line)
        if not tokens:
            continue
        if len(tokens) < width or (len(tokens) > width and not trec):
            raise width_error(tokens, expected, name, line_no)
        try:
            if trec:
                score = parse_score(tokens[4], name, line_no)
            else:
                score = -float(parse_rank(tokens[2], name, line_no))
        except FormatError as exc:
            raise hash_hint(exc, tokens) from None
        yield line_no, tokens[0], tokens[2 if trec else 1], score


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
