"""Fast path for whitespace run files (TREC, MS MARCO) through pyarrow's multithreaded CSV reader.

It only ever says "this file is clean, here is the run" or "not sure" (None); in the latter case
the caller re-reads the file line by line, which decides and words any error. So it must never
accept a file that the line parser would reject or read differently: bytes that trec_eval counts
as whitespace but pyarrow does not split on send the file to the line parser.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .errors import FormatError
from .filled import Filled, FilledStrings
from .run_dedup import has_duplicates, none_in_groups, string_hashes
from .run_lines import Grouped
from .textio import Opened

_BLOCK = 8 * 1024 * 1024  # bytes handed to one read_csv call; the next one parses meanwhile
# The first block is small and blocks double up to _BLOCK: a bad line near the top (a docid
# twice, found only once the rows are grouped) is then seen before the rest is read.
_FIRST_BLOCK = 64 * 1024
_ARROW_BLOCK = 2 * 1024 * 1024  # pyarrow's own chunking inside a call (its threads)
_MAX_TAIL = 1024 * 1024  # a line longer than this sends the file to the line parser
_RANK_PATTERN = r"^[0-9]+$"
_BUFFERS = 3  # blocks read into buffers taken in turn (see _blocks)
_END = 1 << 62  # past the end of any string: binary_replace_slice appends there


def newline_ended(docids: pa.Array) -> pa.Array:
    """Each docid followed by a newline, the form in which a run's ranked lists are stored."""
    return pc.binary_replace_slice(docids, start=_END, stop=_END, replacement="\n")


def without_newlines(ended: pa.Array) -> pa.LargeStringArray:
    """The docids of a `newline_ended` array (a copy without the last byte of each)."""
    plain = pc.binary_slice(ended.cast(pa.large_binary()), 0, -1)
    return plain.cast(pa.large_string())


class _Unclean(Exception):
    """The file holds something the fast path would not read exactly like the line parser."""


def _blocks(opened: Opened, delimiter: str) -> Iterator[tuple[memoryview, bool]]:
    """Yield the decompressed file in whole-line blocks, each with "has padding spaces".

    pyarrow splits on one delimiter byte and ends lines at a bare CR; trec_eval splits on any
    ASCII whitespace and does not treat a bare CR as a line end. Any byte where the two would
    differ (or a NUL, which the line parser rejects) raises _Unclean. Spaces in a TAB-separated
    file are allowed here (pyarrow trims them around numbers, as trec_eval would skip them) and
    the string columns of such a block are then checked for spaces.

    Blocks are read into _BUFFERS buffers taken in turn (a new 8 MB object per block costs
    its pages' faults again): the caller must be done parsing a block before it takes the
    block _BUFFERS after it (read_fast has at most two on the way). The first block holds
    _FIRST_BLOCK bytes, and each next one twice as many, up to _BLOCK.
    """
    odd = tuple({b"\t", b"\v", b"\f", b"\x00"} - {delimiter.encode()})
    readinto, readline = opened.stream.readinto, opened.stream.readline
    buffers = [bytearray() for _ in range(_BUFFERS)]  # each grows with the blocks, then stays
    size = _FIRST_BLOCK
    for turn in itertools.count():
        slot = turn % _BUFFERS
        if len(buffers[slot]) < size + _MAX_TAIL:
            buffers[slot] = bytearray(size + _MAX_TAIL)
        data = buffers[slot]
        view = memoryview(data)
        n = 0
        while n < size and (got := readinto(view[n:size])):
            n += got
        size = min(2 * size, _BLOCK)
        if not n:
            return
        if data[n - 1] != 10:  # the block ends inside a line: read the rest of it
            tail = readline(_MAX_TAIL)
            if len(tail) == _MAX_TAIL and not tail.endswith(b"\n"):
                raise _Unclean
            view[n : n + len(tail)] = tail
            n += len(tail)
        if any(data.find(b, 0, n) >= 0 for b in odd):
            raise _Unclean
        if data.find(b"\r", 0, n) >= 0 and data.count(b"\r", 0, n) != data.count(b"\r\n", 0, n):
            raise _Unclean
        # The short head settles almost every block without copying all of it.
        if bytes(view[: min(n, 64)]).strip(b"\r\n") or bytes(view[:n]).strip(b"\r\n"):
            yield view[:n], delimiter == "\t" and data.find(b" ", 0, n) >= 0


def read_fast(
    opened: Opened, fmt: str, delimiter: str, size: int = 0
) -> tuple[Grouped, np.ndarray] | None:
    """Parse a clean TREC or MS MARCO run; None when the line parser must have a look.

    `size`: the file's size in bytes when known (0 if not). The run's arrays are reserved
    from it and the first block (see formats.filled and _Grouper).

    Returns the grouped run, its docids `newline_ended`, and the docids' hashes
    (run_dedup.string_hashes of the docids themselves, same order).

    A worker thread parses block k+1 (pyarrow releases the GIL and uses its own threads) while
    this thread groups block k and hashes its docids, so the two overlap. While the blocks
    still grow, the rows so far are checked for a docid twice after each one: a duplicate near
    the top then sends the file to the line parser, which refuses it at its line, before the
    rest is read (the check of the whole run at the end finds any later one).
    """
    trec = fmt == "trec"
    options = _csv_options(trec, delimiter)
    docid_col = 2 if trec else 1

    def parse(data: memoryview, padded: bool) -> _Parsed:
        """One block's table and its docids newline_ended (here, off the main thread)."""
        table = pacsv.read_csv(pa.py_buffer(data), **options)
        return table, newline_ended(table.column(docid_col)).combine_chunks(), padded, len(data)

    grouper = _Grouper(size * 4 if opened.gzipped else size)
    blocks = _blocks(opened, delimiter)
    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            pending = _submit(pool, parse, blocks)
            read = 0
            while pending is not None:
                following = _submit(pool, parse, blocks)
                table, ended, padded, block_size = pending.result()
                grouper.reserve(block_size, len(ended), ended.nbytes)
                start = 0
                for batch in table.to_batches():
                    scores = _checked_scores(batch, trec, padded)
                    if scores is None:
                        return None
                    ids = ended.slice(start, batch.num_rows)
                    grouper.add(batch.column(0), batch.column(docid_col), ids, scores)
                    start += batch.num_rows
                read += block_size
                # Only while the blocks grow (the first _BLOCK bytes); the last block is left to
                # grouper.result(), which checks every row.
                if read < _BLOCK and following is not None and grouper.duplicated():
                    return None
                pending = following
        except FormatError:  # size guard or broken gzip: final, not a fallback case
            raise
        except (_Unclean, pa.ArrowException, ValueError):  # the line parser will say why
            return None
    return grouper.result() if grouper.rows else None


_Parsed = tuple[pa.Table, pa.Array, bool, int]  # table, ended docids, "padded", bytes read


def _csv_options(trec: bool, delimiter: str) -> dict[str, Any]:
    """pyarrow's CSV options for a run's columns: no quoting, no nulls, UTF-8 checked."""
    names = ["qid", "iter", "docid", "rank", "score", "tag"] if trec else ["qid", "docid", "rank"]
    types = {name: pa.string() for name in names}
    if trec:
        types["score"] = pa.float64()
    return {
        "read_options": pacsv.ReadOptions(column_names=names, block_size=_ARROW_BLOCK),
        "parse_options": pacsv.ParseOptions(
            delimiter=delimiter, quote_char=False, double_quote=False, escape_char=False
        ),
        "convert_options": pacsv.ConvertOptions(
            column_types=types,
            null_values=[],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            check_utf8=True,
        ),
    }


def _submit(
    pool: ThreadPoolExecutor,
    parse: Callable[[memoryview, bool], _Parsed],
    blocks: Iterator[tuple[memoryview, bool]],
) -> Future[_Parsed] | None:
    block = next(blocks, None)
    return None if block is None else pool.submit(parse, *block)


def _checked_scores(batch: pa.RecordBatch, trec: bool, padded: bool) -> np.ndarray | None:
    """Scores of a batch, or None if a field is empty or a value is one the line parser rejects."""
    for column in batch.columns:
        if column.null_count:
            return None
        if pa.types.is_string(column.type) and (
            pc.min(pc.binary_length(column)).as_py() == 0
            or (padded and pc.any(pc.match_substring(column, " ")).as_py())
        ):
            return None
    if trec:
        scores = batch.column(4).to_numpy()
        return scores if np.isfinite(scores).all() else None  # the line parser words it
    ranks = batch.column(2)
    if not pc.all(pc.match_substring_regex(ranks, _RANK_PATTERN)).as_py():
        return None
    try:
        return -pc.cast(ranks, pa.int64()).to_numpy().astype(np.float64)
    except pa.ArrowInvalid:  # beyond int64: the line parser copes
        return None


class _Grouper:
    """Collects batches as runs of equal qids ("segments"); docids (newline-ended), their
    hashes and the scores go straight into arrays of the whole run (formats.filled).

    Duplicates are found once at the end (run_dedup: hashes of the docid bytes, computed per
    batch while the worker thread parses the next block), interleaved queries included.
    """

    def __init__(self, size: int) -> None:
        self.rows = 0
        self._size = size  # the file's bytes, 0 when unknown
        self._docids = FilledStrings(0, 0)  # newline_ended; all three reserved by `reserve`
        self._hashes = Filled(np.uint64, 0)
        self._scores = Filled(np.float64, 0)
        self._first_seen: dict[str, int] = {}
        self._seg_codes: list[int] = []
        self._seg_starts: list[int] = []
        self._current: str | None = None
        self._interleaved = False  # a qid came back after another: regroup at the end

    def reserve(self, block_size: int, entries: int, docid_bytes: int) -> None:
        """Before the first block is added: reserve room for the whole file, scaled from what
        that block of `block_size` bytes holds, a tenth more (they grow if it was too little)."""
        if self.rows:
            return
        total = self._size if self._size > 0 else 8 * block_size  # a guess when unknown
        scale = 1.1 * max(total, block_size) / max(block_size, 1)
        rows = int(entries * scale) + 1
        self._docids = FilledStrings(int(docid_bytes * scale) + 1, rows)
        self._hashes = Filled(np.uint64, rows)
        self._scores = Filled(np.float64, rows)

    def add(self, qids: pa.Array, docids: pa.Array, ended: pa.Array, scores: np.ndarray) -> None:
        """Take one batch: its qids, docids, the same docids newline_ended, and scores."""
        n = len(qids)
        if n == 0:
            return
        starts = [0]
        if n > 1:
            changed = pc.not_equal(qids.slice(1), qids.slice(0, n - 1)).to_numpy(
                zero_copy_only=False
            )
            starts += (np.flatnonzero(changed) + 1).tolist()
        seg_qids = pc.take(qids, pa.array(starts, pa.int64())).to_pylist()
        for start, qid in zip(starts, seg_qids, strict=True):
            if qid != self._current:
                if qid in self._first_seen:
                    self._interleaved = True
                code = self._first_seen.setdefault(qid, len(self._first_seen))
                self._current = qid
                self._seg_codes.append(code)
                self._seg_starts.append(self.rows + start)
        self._hashes.extend(string_hashes(docids))
        # Kept newline-ended (the form the upload stores): ranking then copies them once.
        self._docids.extend(ended)
        self._scores.extend(scores)
        self.rows += n

    def _segments(self) -> tuple[np.ndarray, np.ndarray]:
        """Each segment's length and query code."""
        seg_len = np.diff(np.array([*self._seg_starts, self.rows], dtype=np.int64))
        return seg_len, np.array(self._seg_codes, dtype=np.int64)

    def _check(self, seg_len: np.ndarray, seg_codes: np.ndarray) -> tuple[bool, np.ndarray | None]:
        """Whether a docid repeats within a query among the rows so far, and the query code
        per entry when the check needed them (None when the quick check settled it)."""
        hashes = self._hashes.array()
        if not self._interleaved and none_in_groups(seg_len, hashes):  # one segment per query
            return False, None
        row_codes = np.repeat(seg_codes, seg_len)
        return has_duplicates(row_codes, hashes, self._docids.array()), row_codes

    def duplicated(self) -> bool:
        """True when a docid repeats within a query among the rows added so far."""
        return self._check(*self._segments())[0]

    def result(self) -> tuple[Grouped, np.ndarray] | None:
        """The grouped run and the docids' hashes. Its docids are one LargeStringArray of
        `newline_ended` values (compared whole, they are equal when the docids are).

        None if a docid repeats within a query.
        """
        docids, scores = self._docids.array(), self._scores.array()
        seg_len, seg_codes = self._segments()
        hashes = self._hashes.array()
        duplicated, row_codes = self._check(seg_len, seg_codes)
        if duplicated:
            return None
        qids = list(self._first_seen)
        offsets = np.zeros(len(qids) + 1, dtype=np.int64)
        counts = np.bincount(seg_codes, weights=seg_len, minlength=len(qids)).astype(np.int64)
        np.cumsum(counts, out=offsets[1:])
        if row_codes is not None and self._interleaved:
            order = np.argsort(row_codes, kind="stable")
            docids, scores = docids.take(pa.array(order)), scores[order]
            hashes = hashes[order]
        return (qids, offsets, docids, scores, self.rows), hashes
