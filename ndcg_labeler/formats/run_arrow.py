"""Fast path for whitespace run files (TREC, MS MARCO) through pyarrow's multithreaded CSV reader.

It says "this file is clean, here is the run", "not sure" (None: the caller re-reads the file
line by line, which decides and words any error) or, for the two errors found only once rows
are grouped (a docid twice in a query, a query the caller refuses), Refused at a row whose
every predecessor is clean, which the caller words as the line parser would. So it must never
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
from .filled import Filled, FilledStrings, indices, numbers
from .run_dedup import first_duplicate, found_in, merged, none_in_groups, query_keys, string_hashes
from .run_lines import Grouped
from .textio import Opened

_BLOCK = 8 * 1024 * 1024  # bytes handed to one read_csv call; the next one parses meanwhile
# The first block is small and blocks double up to _BLOCK: a bad line near the top (a docid
# twice, found only once the rows are grouped) is then seen before much is read; each block
# is checked as it comes (_Grouper.check_block), so one further in is seen at its block.
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
    opened: Opened,
    fmt: str,
    delimiter: str,
    size: int = 0,
    qid_check: Callable[[str], str | None] | None = None,
) -> tuple[Grouped, np.ndarray] | None:
    """Parse a clean TREC or MS MARCO run; None when the line parser must have a look.

    `size`: the file's size in bytes when known (0 if not). The run's arrays are reserved
    from it and the first block (see formats.filled and _Grouper). `qid_check` (see
    runs.read_run) is asked about each query as it is first met.

    Returns the grouped run, its docids `newline_ended`, and the docids' hashes
    (run_dedup.string_hashes of the docids themselves, same order). Raises Refused at the
    first docid twice in a query or query qid_check refuses, once the block that holds it
    is read (every row before it clean), without reading the rest.

    A worker thread parses block k+1 (pyarrow releases the GIL and uses its own threads) while
    this thread groups block k, hashes its docids and checks it for repeats, so the two overlap.
    """
    trec = fmt == "trec"
    options = _csv_options(trec, delimiter)
    docid_col = 2 if trec else 1

    def parse(data: memoryview, padded: bool) -> _Parsed:
        """One block's table and its docids newline_ended (here, off the main thread)."""
        table = pacsv.read_csv(pa.py_buffer(data), **options)
        return table, newline_ended(table.column(docid_col)).combine_chunks(), padded, len(data)

    grouper = _Grouper(size * 4 if opened.gzipped else size, qid_check)
    blocks = _blocks(opened, delimiter)
    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            pending = _submit(pool, parse, blocks)
            while pending is not None:
                following = _submit(pool, parse, blocks)
                table, ended, padded, block_size = pending.result()
                grouper.reserve(block_size, len(ended), ended.nbytes)
                grouper.start_block()
                start = 0
                for batch in table.to_batches():
                    scores = _checked_scores(batch, trec, padded)
                    if scores is None:
                        return None
                    ids = ended.slice(start, batch.num_rows)
                    grouper.add(batch.column(0), batch.column(docid_col), ids, scores)
                    start += batch.num_rows
                refused = grouper.check_block()
                if refused is not None:
                    raise refused
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
        scores = numbers(batch.column(4))
        return scores if np.isfinite(scores).all() else None  # the line parser words it
    ranks = batch.column(2)
    if not pc.all(pc.match_substring_regex(ranks, _RANK_PATTERN)).as_py():
        return None
    try:
        return -numbers(pc.cast(ranks, pa.int64())).astype(np.float64)
    except pa.ArrowInvalid:  # beyond int64: the line parser copes
        return None


class Refused(Exception):
    """A run refused at a row (0-based among its non-blank lines), every row before it clean.

    The fast path counts rows, not lines (pyarrow skips blank lines), so read_run turns `row`
    (and `first`, the row a repeated docid was first seen at) into line numbers by reading
    the file's lines again up to there.
    """

    def __init__(self, row: int, reason: str, first: int | None = None) -> None:
        super().__init__(reason)
        self.row, self.reason, self.first = row, reason, first


# An open query whose earlier rows outnumber a block's by this much is checked against the
# sorted keys of the rows before (built when first needed) instead of being re-read per block.
_REREAD = 4


class _Grouper:
    """Collects batches as runs of equal qids ("segments"); docids (newline-ended), their
    hashes and the scores go straight into arrays of the whole run (formats.filled).

    Each block is checked for a docid twice as it is added (`check_block`), so a repeat is
    refused at the block that holds it: rows of a block are checked against each other and
    against the rows before of its queries. A run lists a query's lines together, so those
    are only the open query's first rows; a query that comes back later (or a very long one)
    is checked against the sorted keys of every row before (run_dedup.query_keys, 8 bytes a
    row, built only then).
    """

    def __init__(self, size: int, qid_check: Callable[[str], str | None] | None = None) -> None:
        self.rows = 0
        self._size = size  # the file's bytes, 0 when unknown
        self._docids = FilledStrings(0, 0)  # newline_ended; all three reserved by `reserve`
        self._hashes = Filled(np.uint64, 0)
        self._scores = Filled(np.float64, 0)
        self._first_seen: dict[str, int] = {}
        # Per segment (numpy, appended a batch at a time: the checks slice them per block).
        self._seg_codes = Filled(np.int64, 64)
        self._seg_starts = Filled(np.int64, 64)
        self._current: str | None = None
        self._interleaved = False  # a qid came back after another: regroup at the end
        self._qid_check = qid_check
        self.refused: Refused | None = None  # the first query qid_check refused
        self._block = (0, 0, False)  # first row, codes before, a qid came back in it
        self._back = False  # the current qid had rows before its current segment
        self._keys = np.empty(0, dtype=np.uint64)  # sorted query_keys of rows [0, _indexed)
        self._indexed = 0

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

    def start_block(self) -> None:
        """Mark where the next block's rows begin (see check_block)."""
        # A query that came back and is still open has rows before its segment too.
        self._block = (self.rows, len(self._first_seen), self._back)

    def add(self, qids: pa.Array, docids: pa.Array, ended: pa.Array, scores: np.ndarray) -> None:
        """Take one batch: its qids, docids, the same docids newline_ended, and scores."""
        n = len(qids)
        if n == 0:
            return
        starts = [0]
        if n > 1:
            changed = numbers(pc.not_equal(qids.slice(1), qids.slice(0, n - 1)))
            starts += (np.flatnonzero(changed) + 1).tolist()
        seg_qids = pc.take(qids, indices(np.array(starts))).to_pylist()
        codes, begins = [], []
        for start, qid in zip(starts, seg_qids, strict=True):
            if qid != self._current:
                self._back = qid in self._first_seen
                if self._back:
                    self._interleaved = True
                    self._block = (*self._block[:2], True)
                else:
                    self._new_query(qid, self.rows + start)
                code = self._first_seen.setdefault(qid, len(self._first_seen))
                self._current = qid
                codes.append(code)
                begins.append(self.rows + start)
        self._seg_codes.extend(np.array(codes, dtype=np.int64))
        self._seg_starts.extend(np.array(begins, dtype=np.int64))
        self._hashes.extend(string_hashes(docids))
        # Kept newline-ended (the form the upload stores): ranking then copies them once.
        self._docids.extend(ended)
        self._scores.extend(scores)
        self.rows += n

    def _new_query(self, qid: str, row: int) -> None:
        """Ask the caller's qid_check about a query met for the first time."""
        if self._qid_check is not None and self.refused is None:
            reason = self._qid_check(qid)
            if reason is not None:
                self.refused = Refused(row, reason)

    def check_block(self) -> Refused | None:
        """The first row of the block since start_block whose docid its query had before
        (in this block or earlier), or the first query qid_check refused: whichever comes
        first; None when the block is clean."""
        r0, codes_before, came_back = self._block
        r1 = self.rows
        if r1 == r0:
            return self.refused
        s0 = self._segment_of(r0)
        open_start = int(self._seg_starts.array()[s0])
        if came_back or r0 - open_start > _REREAD * (r1 - r0):
            found = self._against_keys(r0, r1, codes_before)
        else:
            found = self._within(open_start, r1, s0)
        refused = self.refused
        if found is not None and (refused is None or found[1] < refused.row):
            first, row = found
            docid = self._docids.array()[row].as_py()[:-1]
            qid = list(self._first_seen)[self._code_of(row)]
            return Refused(row, f"docid '{docid}' appears twice for query {qid}", first)
        return refused

    def _within(self, a: int, b: int, s0: int) -> tuple[int, int] | None:
        """First repeat among rows [a, b), whose segments (from s0) are distinct queries."""
        starts = np.append(self._seg_starts.array()[s0:], b)
        lengths = np.diff(starts)
        hashes = self._hashes.array()[a:b]
        # The first and last queries are cut by the block's ends; the ones between usually
        # have as many rows each, which none_in_groups checks fastest (no padding).
        cuts = [0, 1, lengths.size - 1, lengths.size] if lengths.size > 2 else [0, lengths.size]
        bounds = starts[cuts] - a
        if all(
            none_in_groups(lengths[c0:c1], hashes[b0:b1])
            for c0, c1, b0, b1 in zip(cuts, cuts[1:], bounds, bounds[1:], strict=False)
        ):
            return None
        codes = np.repeat(np.arange(lengths.size), lengths)
        found = first_duplicate(codes, hashes, self._docids.array().slice(a, b - a))
        return None if found is None else (found[0] + a, found[1] + a)

    def _against_keys(self, r0: int, r1: int, codes_before: int) -> tuple[int, int] | None:
        """First repeat among rows [r0, r1), within them or with a row before r0."""
        hashes = self._hashes.array()
        codes = self._row_codes(r0, r1)
        found = first_duplicate(codes, hashes[r0:r1], self._docids.array().slice(r0, r1 - r0))
        if found is not None:
            found = (found[0] + r0, found[1] + r0)
        self._index_until(r0)
        older = np.flatnonzero(codes < codes_before)  # rows of queries met before the block
        hits = older[found_in(self._keys, query_keys(codes[older], hashes[r0 + older]))]
        for row in (hits + r0).tolist():
            if found is not None and row > found[1]:
                break
            first = self._earlier(row)
            if first is not None:  # else two keys alike by chance: not a repeat
                return first, row
        return found

    def _earlier(self, row: int) -> int | None:
        """The row before `row` with its query and docid (exact), if any."""
        hashes = self._hashes.array()
        same = np.flatnonzero(hashes[:row] == hashes[row])
        code, docids = self._code_of(row), self._docids.array()
        name = docids[row].as_py()
        for other in same.tolist():
            if self._code_of(other) == code and docids[other].as_py() == name:
                return other
        return None

    def _code_of(self, row: int) -> int:
        return int(self._seg_codes.array()[self._segment_of(row)])

    def _segment_of(self, row: int) -> int:
        """The index of the segment that holds `row`."""
        return int(np.searchsorted(self._seg_starts.array(), row, side="right")) - 1

    def _row_codes(self, a: int, b: int) -> np.ndarray:
        """The query code of each row of [a, b)."""
        s0 = self._segment_of(a)
        s1 = int(np.searchsorted(self._seg_starts.array(), b, side="left"))
        starts = self._seg_starts.array()[s0:s1].copy()
        ends = np.append(starts[1:], b)
        starts[0] = a
        return np.repeat(self._seg_codes.array()[s0:s1], ends - starts)

    def _index_until(self, row: int) -> None:
        """Bring the sorted keys up to the rows before `row`."""
        if row > self._indexed:
            codes = self._row_codes(self._indexed, row)
            more = np.sort(query_keys(codes, self._hashes.array()[self._indexed : row]))
            self._keys = merged(self._keys, more)
            self._indexed = row

    def result(self) -> tuple[Grouped, np.ndarray]:
        """The grouped run and the docids' hashes. Its docids are one LargeStringArray of
        `newline_ended` values (compared whole, they are equal when the docids are).

        Every block was checked for repeats as it came (check_block).
        """
        docids, scores = self._docids.array(), self._scores.array()
        seg_len = np.diff(np.append(self._seg_starts.array(), self.rows))
        seg_codes = self._seg_codes.array()
        hashes = self._hashes.array()
        qids = list(self._first_seen)
        offsets = np.zeros(len(qids) + 1, dtype=np.int64)
        counts = np.bincount(seg_codes, weights=seg_len, minlength=len(qids)).astype(np.int64)
        np.cumsum(counts, out=offsets[1:])
        if self._interleaved:
            order = np.argsort(np.repeat(seg_codes, seg_len), kind="stable")
            docids, scores = docids.take(indices(order)), scores[order]
            hashes = hashes[order]
        return (qids, offsets, docids, scores, self.rows), hashes
