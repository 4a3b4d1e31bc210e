"""Fast path for whitespace run files (TREC, MS MARCO) through pyarrow's multithreaded CSV reader.

It only ever says "this file is clean, here is the run" or "not sure" (None); in the latter case
the caller re-reads the file line by line, which decides and words any error. So it must never
accept a file that the line parser would reject or read differently: bytes that trec_eval counts
as whitespace but pyarrow does not split on send the file to the line parser.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .errors import FormatError
from .run_lines import Grouped
from .textio import Opened

_BLOCK = 16 * 1024 * 1024
_RANK_PATTERN = r"^[0-9]+$"


class _ScanningReader:
    """Hands bytes to pyarrow and notes any the single-delimiter split would misread."""

    def __init__(self, opened: Opened, delimiter: str) -> None:
        self._read = opened.stream.read
        odd = {b" ", b"\t", b"\v", b"\f", b"\x00"} - {delimiter.encode()}
        self._odd = tuple(odd)
        self._bare_cr = 0
        self._prev_cr = False
        self.suspicious = False
        self.error: FormatError | None = None
        self.closed = False

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        try:
            data = self._read(n)
        except FormatError as exc:  # size guard or broken gzip: final, not a fallback case
            self.error = exc
            raise
        if not data:
            return data
        if not self.suspicious and any(b in data for b in self._odd):
            self.suspicious = True
        # pyarrow ends a line at a bare CR; trec_eval (and the line parser) do not.
        if self._prev_cr and data[:1] == b"\n":
            self._bare_cr -= 1
        if b"\r" in data:
            self._bare_cr += data.count(b"\r") - data.count(b"\r\n")
        self._prev_cr = data[-1:] == b"\r"
        return data

    def close(self) -> None:
        self.closed = True

    @property
    def clean(self) -> bool:
        """True when every byte was one the fast path reads exactly like the line parser."""
        return not self.suspicious and self._bare_cr == 0


def read_fast(opened: Opened, fmt: str, delimiter: str) -> Grouped | None:
    """Parse a clean TREC or MS MARCO run; None when the line parser must have a look."""
    trec = fmt == "trec"
    names = ["qid", "iter", "docid", "rank", "score", "tag"] if trec else ["qid", "docid", "rank"]
    types = {name: pa.string() for name in names}
    if trec:
        types["score"] = pa.float64()
    reader = _ScanningReader(opened, delimiter)
    try:
        table = pacsv.read_csv(
            reader,
            read_options=pacsv.ReadOptions(column_names=names, block_size=_BLOCK),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter, quote_char=False, double_quote=False, escape_char=False
            ),
            convert_options=pacsv.ConvertOptions(
                column_types=types,
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                check_utf8=True,
            ),
        )
    except Exception:
        if reader.error is not None:
            raise reader.error from None
        return None
    if not reader.clean or table.num_rows == 0:
        return None
    for name in names:
        column = table.column(name)
        if column.null_count or (
            pa.types.is_string(column.type) and pc.min(pc.binary_length(column)).as_py() == 0
        ):
            return None
    if trec:
        scores = table.column("score").to_numpy()
        if np.isnan(scores).any():
            return None
    else:
        ranks = table.column("rank")
        if not pc.all(pc.match_substring_regex(ranks, _RANK_PATTERN)).as_py():
            return None
        try:
            scores = -pc.cast(ranks, pa.int64()).to_numpy().astype(np.float64)
        except pa.ArrowInvalid:  # beyond int64: let the line parser handle it
            return None
    return _group(table, scores)


def _group(table: pa.Table, scores: np.ndarray) -> Grouped | None:
    """Group rows by qid in first-seen order; None if a docid repeats within a query."""
    encoded = table.column("qid").combine_chunks().dictionary_encode()
    codes = encoded.indices.to_numpy()
    qids: list[str] = encoded.dictionary.to_pylist()
    docids = table.column("docid").to_numpy()
    del table
    if len(codes) > 1 and (codes[1:] < codes[:-1]).any():
        order = np.argsort(codes, kind="stable")
        codes, docids, scores = codes[order], docids[order], scores[order]
    offsets = np.zeros(len(qids) + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=len(qids)), out=offsets[1:])
    as_list = docids.tolist()
    bounds = offsets.tolist()
    for start, end in itertools.pairwise(bounds):
        if len(set(as_list[start:end])) != end - start:
            return None
    return qids, offsets, docids, np.ascontiguousarray(scores, dtype=np.float64), len(codes)
