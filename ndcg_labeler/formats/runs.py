"""Read a retriever's run (TREC, CSV/TSV, JSONL, MS MARCO; gzip ok) into per-query arrays."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from .errors import FormatError
from .fields import QRELS_NOT_RUN, looks_like_qrels, split_ws
from .quepid import SNAPSHOT_HEADER
from .run_arrow import Refused, newline_ended, read_fast, without_newlines
from .run_dedup import string_hashes
from .run_lines import (
    Grouped,
    QidCheck,
    collect,
    collect_whitespace,
    delimited_entries,
    jsonl_entries,
    row_lines,
)
from .tabular import header_names
from .textio import DEFAULT_MAX_BYTES, Opened, Source, first_line, open_source, size_of

RUN_FORMATS = ("trec", "msmarco", "csv", "tsv", "jsonl")


@dataclass(eq=False)
class ParsedRun:
    """A run grouped by query.

    Entries of query `qids[i]` are `docids[offsets[i]:offsets[i+1]]` with their `scores`, in
    file order (NOT sorted); rank them by score descending, then docid descending (trec_eval).
    The docids come as `ids`, whichever form the parser made: a pyarrow LargeStringArray (the
    fast path, no Python object per docid; `ended`: each value followed by a newline, the form
    a ranked list is stored in) or an object array of `str`; `docid_array`, `docids` and
    `newline_ended` give each form (converted once, on first use). Rank-only formats get
    `score = -rank`. Only a JSONL ranking can list a query with no documents: it gets zero
    entries.
    """

    qids: list[str]
    offsets: np.ndarray
    ids: np.ndarray | pa.Array
    scores: np.ndarray
    format: str
    lines: int
    hashes: np.ndarray | None = None  # run_dedup.string_hashes of the docids, when at hand
    ended: bool = False  # ids are newline_ended (an Arrow array)

    @cached_property
    def docid_hashes(self) -> np.ndarray:
        """run_dedup.string_hashes of the docids (uint64, entry order)."""
        if self.hashes is not None:
            return self.hashes
        return string_hashes(self.docid_array)

    @cached_property
    def docids(self) -> np.ndarray:
        """The docids as an object array of Python `str`."""
        if isinstance(self.ids, np.ndarray):
            return self.ids
        return self.docid_array.to_numpy(zero_copy_only=False)

    @cached_property
    def docid_array(self) -> pa.LargeStringArray:
        """The docids as a pyarrow LargeStringArray."""
        if isinstance(self.ids, np.ndarray):
            return pa.array(self.ids, type=pa.large_string())
        return without_newlines(self.ids) if self.ended else self.ids

    @cached_property
    def newline_ended(self) -> pa.LargeStringArray:
        """The docids as a LargeStringArray of `run_arrow.newline_ended` values."""
        return self.ids if self.ended else newline_ended(self.docid_array)

    def __len__(self) -> int:
        return len(self.qids)

    def entries(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Return (docids, scores) of the i-th query."""
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.docids[start:end], self.scores[start:end]

    def items(self) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """Yield (qid, docids, scores) per query in first-seen order."""
        for i, qid in enumerate(self.qids):
            yield (qid, *self.entries(i))


QUEPID_SNAPSHOT_NOT_RUN = (
    "this is a Quepid case snapshot, not a run file: upload it as a snapshot "
    "(flask run upload --format quepid-snapshot, the API's format=quepid-snapshot, or the "
    "upload page's File format)"
)


def detect_run_format(first: str | None, filename: str) -> str:
    """Name the run format from the first non-blank line (see ParsedRun.format)."""
    if first is None:
        raise FormatError(filename, None, "file is empty")
    if first.startswith("{"):
        return "jsonl"
    delimiter = "\t" if "\t" in first else ","
    names = header_names(first, delimiter)
    if names[: len(SNAPSHOT_HEADER)] == [n.lower() for n in SNAPSHOT_HEADER]:
        # Else its header, split on blanks, reads as a 6-column TREC line with a bad score.
        raise FormatError(filename, 1, QUEPID_SNAPSHOT_NOT_RUN)
    if "qid" in names and "docid" in names:
        kind = "tsv" if delimiter == "\t" else "csv"
        if "score" in names:
            return f"{kind}-score"
        if "rank" in names:
            return f"{kind}-rank"
        raise FormatError(filename, 1, "header has qid and docid but neither score nor rank")
    width = len(split_ws(first))
    if width >= 6:  # trec_eval ignores fields after the tag
        return "trec"
    if width == 3:
        return "msmarco"
    if looks_like_qrels(first):
        raise FormatError(filename, 1, QRELS_NOT_RUN)
    reason = (
        f"cannot tell the run format: the first line has {width} columns; expected a TREC run "
        "(qid Q0 docid rank score tag), MS MARCO (qid<TAB>docid<TAB>rank), a CSV/TSV header "
        "qid,docid,score (or rank), or JSON lines"
    )
    raise FormatError(filename, None, reason)


def read_run(
    source: Source,
    filename: str | None = None,
    *,
    depth: int | None = None,
    fmt: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    fast: bool = True,
    qid_check: QidCheck | None = None,
) -> ParsedRun:
    """Parse and validate a whole run; keep the top `depth` per query when given.

    The format is detected from the content unless `fmt` names it. Validation is trec_eval's
    (a docid twice in one query, too few columns, a bad score are file:line errors) and covers
    the whole file even with `depth`; the first error is raised without reading the rest.
    `qid_check` is asked about each query id as it is first met: a string it returns refuses
    the file at that line, with that reason. Clean TREC/MS MARCO files take a pyarrow fast
    path; anything it is unsure about is re-read by the line parser (`fast=False` forces
    that), which needs `source` to be a path or a seekable stream for the fast path to be tried.
    """
    if depth is not None and depth < 1:
        raise ValueError("depth must be a positive integer")
    if fmt is not None and fmt not in RUN_FORMATS:
        raise ValueError(f"fmt must be one of {RUN_FORMATS}, not {fmt!r}")
    start = _tell(source)
    grouped: Grouped | None = None
    hashes: np.ndarray | None = None
    ended = False  # the fast path hands its docids over newline-ended
    refused: Refused | None = None
    with open_source(source, filename, max_bytes=max_bytes) as opened:
        name = _resolve(opened, fmt)
        if fast and name in ("trec", "msmarco") and start is not None:
            delimiter = "\t" if "\t" in (first_line(opened.head, skip_hash=True) or "") else " "
            try:
                fast_run = read_fast(opened, name, delimiter, _size(source, start), qid_check)
            except Refused as exc:
                fast_run, refused = None, exc
            if fast_run is not None:
                (grouped, hashes), ended = fast_run, True
        else:
            grouped, name = _read_lines(opened, name, qid_check)
    if grouped is None:  # the fast path refused or declined: re-read for the line or verdict
        if not isinstance(source, str | os.PathLike):
            source.seek(start or 0)
        with open_source(source, filename, max_bytes=max_bytes) as opened:
            if refused is not None:
                raise _located(opened, refused)
            grouped, name = _read_lines(opened, name, qid_check)
    qids, offsets, docids, scores, lines = grouped
    if depth is not None and (np.diff(offsets) > depth).any():
        if not isinstance(docids, np.ndarray):
            plain = without_newlines(docids) if ended else docids
            docids = plain.to_numpy(zero_copy_only=False)
        offsets, docids, scores = cut_depth(offsets, docids, scores, depth)
        hashes, ended = None, False
    return ParsedRun(qids, offsets, docids, scores, name, lines, hashes, ended)


def _tell(source: Source) -> int | None:
    """Where a stream starts (None when it cannot be rewound); 0 for paths."""
    if isinstance(source, str | os.PathLike):
        return 0
    with suppress(AttributeError, OSError, ValueError):
        if source.seekable():
            return source.tell()
    return None


def _size(source: Source, start: int) -> int:
    """Bytes from `start` to the end of a path or a file-backed or in-memory stream (0 when
    that cannot be told)."""
    size = size_of(source)
    if not size:
        with suppress(AttributeError, ValueError):
            size = source.getbuffer().nbytes  # type: ignore[union-attr]
    return max(size - start, 0)


def _resolve(opened: Opened, fmt: str | None) -> str:
    """The format to parse with: detected, or the caller's (csv/tsv still read the header)."""
    first = first_line(opened.head, skip_hash=True)
    if fmt is None:
        return detect_run_format(first, opened.filename)
    if fmt in ("csv", "tsv"):
        names = header_names(first or "", "\t" if fmt == "tsv" else ",")
        return f"{fmt}-score" if "score" in names else f"{fmt}-rank"
    return fmt


def _read_lines(opened: Opened, name: str, qid_check: QidCheck | None) -> tuple[Grouped, str]:
    filename = opened.filename
    if name in ("trec", "msmarco"):
        return collect_whitespace(opened, name, qid_check), name
    if name == "jsonl" or name.startswith("jsonl-"):
        mode: list[str] = []
        grouped = collect(jsonl_entries(opened, mode), filename, qid_check)
        return grouped, mode[0]
    delimiter = "\t" if name.startswith("tsv") else ","
    return collect(delimited_entries(opened, delimiter), filename, qid_check), name


def _located(opened: Opened, refused: Refused) -> FormatError:
    """The fast path's refusal at a row, worded as the line parser words it at that line.

    Only the lines up to the row are read again (numpy over whole blocks, not a Python loop
    per line), so the time to refuse follows where the error is, not the file's size.
    """
    if refused.first is None:
        (line,) = row_lines(opened, [refused.row])
        return FormatError(opened.filename, line, refused.reason)
    line, first = row_lines(opened, [refused.row, refused.first])
    return FormatError(opened.filename, line, f"{refused.reason} (first at line {first})")


def cut_depth(
    offsets: np.ndarray, docids: np.ndarray, scores: np.ndarray, depth: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep each query's top `depth` by (score desc, docid desc), in file order."""
    counts = np.diff(offsets)
    if not (counts > depth).any():
        return offsets, docids, scores
    keep = np.ones(len(docids), dtype=bool)
    for i in np.flatnonzero(counts > depth):
        start, end = int(offsets[i]), int(offsets[i + 1])
        s = scores[start:end]
        n = end - start
        kth = np.partition(s, n - depth)[n - depth]  # the depth-th largest score
        mask = s > kth
        tied = np.flatnonzero(s == kth)
        room = depth - int(mask.sum())
        if len(tied) > room:  # trec_eval breaks score ties by docid, descending
            names = docids[start:end][tied]
            tied = tied[sorted(range(len(tied)), key=names.__getitem__, reverse=True)[:room]]
        mask[tied] = True
        keep[start:end] = mask
    new_counts = np.minimum(counts, depth)
    new_offsets = np.zeros_like(offsets)
    np.cumsum(new_counts, out=new_offsets[1:])
    return new_offsets, docids[keep], scores[keep]
