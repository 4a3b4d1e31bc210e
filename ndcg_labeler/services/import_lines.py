"""Find again the line of a pool or qrels record, for errors found after parsing.

The parsers yield records without line numbers and the checks against the test set (unknown
qid, grade outside the scale) can only run once the whole file is parsed. Only on that error
path do we re-read the file to name the first line that holds the offending record.
"""

from __future__ import annotations

import os
from typing import BinaryIO

from ndcg_labeler.formats.fields import split_ws
from ndcg_labeler.formats.pairs import detect_pairs_format
from ndcg_labeler.formats.qrels import detect_qrels_format
from ndcg_labeler.formats.textio import Source, first_line, iter_lines, open_source


def rewind(source: Source, start: int | None) -> None:
    """Put a stream back where it started (paths need nothing)."""
    if not isinstance(source, str | os.PathLike) and start is not None:
        source.seek(start)


def start_of(source: Source) -> int | None:
    """The position a stream starts at, or None when it cannot be rewound (0 for paths)."""
    if isinstance(source, str | os.PathLike):
        return 0
    stream: BinaryIO = source
    try:
        return stream.tell() if stream.seekable() else None
    except (OSError, ValueError):
        return None


def _fields(line: str, kind: str) -> list[str]:
    if kind == "trec":
        return split_ws(line)
    delimiter = "," if kind == "csv" else "\t"
    return [field.strip().strip('"').strip() for field in line.split(delimiter)]


def find_line(
    source: Source,
    start: int | None,
    filename: str,
    what: str,
    qid: str,
    docid: str | None = None,
) -> int | None:
    """The first line of a pool (`what="pool"`) or qrels file naming qid (and docid), or None."""
    if start is None:
        return None
    rewind(source, start)
    try:
        with open_source(source, filename) as opened:
            first = first_line(opened.head)
            if what == "qrels":
                kind = detect_qrels_format(first, filename)
                kind, q_col, d_col = ("trec", 0, 2) if kind == "trec" else ("tsv", 0, 1)
            else:
                kind = detect_pairs_format(first, filename)
                q_col, d_col = (0, 2) if kind == "trec" else (0, 1)
            header_done = False
            for line_no, line in iter_lines(opened):
                fields = _fields(line, kind)
                if not any(fields):
                    continue
                if not header_done:
                    header_done = True
                    lowered = [f.lower() for f in fields]
                    if kind != "trec" and "qid" in lowered and "docid" in lowered:
                        q_col, d_col = lowered.index("qid"), lowered.index("docid")
                        continue
                if len(fields) <= max(q_col, d_col):
                    continue
                if fields[q_col] == qid and (docid is None or fields[d_col] == docid):
                    return line_no
    except (OSError, ValueError):
        return None
    finally:
        rewind(source, start)
    return None
