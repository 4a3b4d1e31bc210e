"""A run's ranked entries in memory (RunData), and their join with the grades.

Every ranked docid of a run sits in one buffer (entries.py reads it from RunQuery, or the
upload hands it over), from which one query's docids or every entry's grade come out fast.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

NAN = float("nan")

RankedBuffer = tuple[bytes | memoryview, np.ndarray, np.ndarray, np.ndarray]
"""(data, tok_off, row_off, hashes): every ranked docid "\n"-terminated in one buffer, its
offsets, and each docid's formats.run_dedup.string_hashes (without the newline)."""


@dataclass(frozen=True)
class RankedGrades:
    """Every entry's grade (NaN = unjudged) in the order of a list of queries: query i's at
    grades[offsets[i]:offsets[i + 1]]; `missing[i]`: the run has no ranking for query i."""

    grades: np.ndarray
    offsets: np.ndarray
    missing: np.ndarray


class RunData:
    """A run's ranked docids: every token newline-terminated in one buffer, rows per query."""

    def __init__(
        self, key: tuple[object, ...], query_ids: Iterable[int], blobs: list[bytes], name: str
    ) -> None:
        # Each stored blob is "d1\nd2\n...dn"; joining with "\n" and ending with one more
        # makes every docid end in "\n", so token boundaries are simply the newlines.
        data = b"\n".join(blobs) + b"\n" if blobs else b""
        newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
        tok_off = np.zeros(newlines.size + 1, dtype=np.int64)
        tok_off[1:] = newlines + 1
        counts = np.fromiter((b.count(b"\n") + 1 for b in blobs), dtype=np.int64, count=len(blobs))
        row_off = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum(counts, out=row_off[1:])
        self._setup(key, query_ids, name, data, tok_off, row_off, None)

    @classmethod
    def from_buffer(
        cls,
        key: tuple[object, ...],
        query_ids: Iterable[int],
        name: str,
        data: bytes | memoryview,
        tok_off: np.ndarray,
        row_off: np.ndarray,
        hashes: np.ndarray,
    ) -> RunData:
        """Build from the upload's own buffer (see RankedBuffer)."""
        self = cls.__new__(cls)
        self._setup(key, query_ids, name, data, tok_off, row_off, hashes)
        return self

    def _setup(
        self,
        key: tuple[object, ...],
        query_ids: Iterable[int],
        name: str,
        data: bytes | memoryview,
        tok_off: np.ndarray,
        row_off: np.ndarray,
        hashes: np.ndarray | None,
    ) -> None:
        self.key = key
        self.run_id = int(key[0])  # type: ignore[call-overload]
        self.name = name
        self.runs_version: int | None = None
        self.query_ids = np.fromiter(query_ids, dtype=np.int64)
        self.row_of = {int(q): r for r, q in enumerate(self.query_ids)}
        self.data = data
        self.tok_off = tok_off
        self.row_off = row_off
        import pyarrow as pa

        self.tokens = pa.LargeStringArray.from_buffers(
            tok_off.size - 1, pa.py_buffer(tok_off), pa.py_buffer(data)
        )
        # Docid hashes from the upload's parser (None when read back from the database).
        self.hashes = hashes

    @property
    def entries(self) -> int:
        """Number of ranked entries over all queries."""
        return int(self.row_off[-1])

    def docids(self, row: int) -> list[str]:
        """The ranked docids of one row (query), best first."""
        start = int(self.tok_off[self.row_off[row]])
        end = int(self.tok_off[self.row_off[row + 1]])
        return str(self.data[start : end - 1], "utf-8").split("\n") if end > start else []

    def ranked_grades(self, row: int, grades: dict[str, int]) -> np.ndarray:
        """Grades of one row's docids in rank order (NaN = unjudged)."""
        docids = self.docids(row)
        get = grades.get
        return np.array([get(d, NAN) for d in docids], dtype=np.float64)

    def in_query_order(
        self, query_ids: np.ndarray, grades: dict[int, dict[str, int]]
    ) -> RankedGrades:
        """Every entry's grade laid out in the order of `query_ids` (a test set's queries)."""
        rows = np.array([self.row_of.get(int(q), -1) for q in query_ids], dtype=np.int64)
        missing = rows < 0
        ranked = self.all_ranked_grades(grades)
        present = np.maximum(rows, 0)
        starts = np.where(missing, 0, self.row_off[present])
        lengths = np.where(missing, 0, self.row_off[present + 1] - starts)
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if offsets[-1] != ranked.size or (starts != offsets[:-1]).any():
            # Ragged gather: entry j of query i sits at starts[i] + j in the run's arrays.
            take = np.repeat(starts - offsets[:-1], lengths)
            take += np.arange(offsets[-1])
            ranked = ranked[take]
        # else the run lists every query, in this order: the entries are in place.
        return RankedGrades(ranked, offsets, missing)

    def all_ranked_grades(self, grades: dict[int, dict[str, int]]) -> np.ndarray:
        """Grades of every entry (NaN = unjudged), vectorised with a hash join in pyarrow."""
        out = np.full(self.entries, NAN)
        rows: list[int] = []
        counts: list[int] = []
        docids: list[str] = []
        values: list[int] = []
        for row, qpk in enumerate(self.query_ids.tolist()):
            judged = grades.get(qpk)
            if judged:
                rows.append(row)
                counts.append(len(judged))
                docids.extend(judged)
                values.extend(judged.values())
        if not docids:
            return out
        judged_rows = np.repeat(np.array(rows, dtype=np.int64), counts)
        import pyarrow as pa
        import pyarrow.compute as pc

        judged = pa.array(docids, type=pa.large_string())
        if self.hashes is not None and _join_by_hash(self, judged, judged_rows, values, out):
            return out
        # Number the judged docids (C++), then join on one int64 key per (row, docid).
        encoded = judged.dictionary_encode()
        codes = encoded.indices.to_numpy().astype(np.int64)
        n_codes = len(encoded.dictionary)
        judged_keys = judged_rows * n_codes + codes
        order = np.argsort(judged_keys)
        judged_keys = judged_keys[order]
        judged_grades = np.array(values, dtype=np.float64)[order]
        # Tokens end in "\n" (see __init__), so the value set does too.
        value_set = pc.binary_join_element_wise(encoded.dictionary, *_separators())
        entry_codes = pc.index_in(self.tokens, value_set=value_set).fill_null(-1).to_numpy()
        hit = np.flatnonzero(entry_codes >= 0)
        hit_rows = np.searchsorted(self.row_off, hit, side="right") - 1
        entry_keys = hit_rows * n_codes + entry_codes[hit]
        pos = np.minimum(np.searchsorted(judged_keys, entry_keys), judged_keys.size - 1)
        found = judged_keys[pos] == entry_keys
        out[hit[found]] = judged_grades[pos[found]]
        return out


@lru_cache(maxsize=1)
def _separators() -> tuple[Any, Any]:
    """Arrow scalars "" and "\\n" (built on first use: pyarrow is slow to import at start-up)."""
    import pyarrow as pa

    return pa.scalar("", type=pa.large_string()), pa.scalar("\n", type=pa.large_string())


def string_hashes(array: Any) -> np.ndarray:
    """The upload parser's docid hashes (formats.run_dedup; pyarrow loaded on first use)."""
    from ndcg_labeler.formats import string_hashes as hashes

    return hashes(array)


_ROW_MIX = np.uint64(0xC4CEB9FE1A85EC53)
_PREFILTER_BITS = 24


_BLOCK = 1 << 20  # entries per step of the blockwise passes below (8 MB of uint64)


def _keys(mixed_rows: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """One uint64 key per (row, docid hash), from each entry's row number times _ROW_MIX
    (taken over, not copied). The hashes' low bits are already mixed (run_dedup ends with
    h ^= h >> 29), so the key's low bits serve the bitmap below as they are."""
    mixed_rows ^= hashes
    return mixed_rows


def _row_keys(hashes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One uint64 key per (row, docid hash)."""
    with np.errstate(over="ignore"):
        # Row numbers are never negative: their int64 bits read as uint64 are the same number.
        return _keys(rows.astype(np.int64, copy=False).view(np.uint64) * _ROW_MIX, hashes)


def _candidates(
    data: RunData, bitmap: np.ndarray, mask: np.uint64
) -> tuple[np.ndarray, np.ndarray]:
    """The entries whose _row_keys key may be judged (bitmap[key & mask]), and their keys.

    A block of entries at a time: each row's mixed number repeated over the block's part of
    the row, xor the docid hashes, folded; no key array as large as the run (every fresh
    page costs a fault), only the candidates' keys are kept.
    """
    row_off, n = data.row_off, data.entries
    with np.errstate(over="ignore"):
        mixed = np.arange(row_off.size - 1, dtype=np.uint64) * _ROW_MIX
    low = np.empty(min(n, _BLOCK), dtype=np.uint64)
    found: list[np.ndarray] = [np.empty(0, dtype=np.int64)]
    keys_found: list[np.ndarray] = [np.empty(0, dtype=np.uint64)]
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        r0 = int(np.searchsorted(row_off, start, side="right")) - 1
        r1 = int(np.searchsorted(row_off, stop, side="left"))
        spans = np.diff(np.clip(row_off[r0 : r1 + 1], start, stop))
        keys = _keys(np.repeat(mixed[r0:r1], spans), data.hashes[start:stop])
        np.bitwise_and(keys, mask, out=low[: keys.size])
        hit = np.flatnonzero(bitmap[low[: keys.size].view(np.int64)])  # < 2**24
        found.append(hit + start)
        keys_found.append(keys[hit])
    return np.concatenate(found), np.concatenate(keys_found)


def _join_by_hash(
    data: RunData, judged: pa.Array, judged_rows: np.ndarray, values: list[int], out: np.ndarray
) -> bool:
    """Fill `out` with the judged grades joined on hashed (row, docid) keys; False = not done.

    The upload's parser already hashed every docid, so this beats hashing the 7 M strings
    again (index_in). A bitmap on the keys' low bits sends only likely hits to the binary
    search, and every hit is confirmed by comparing the strings, so the join stays exact.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    judged_keys = _row_keys(string_hashes(judged), judged_rows)
    order = np.argsort(judged_keys)
    judged_keys = judged_keys[order]
    if (judged_keys[1:] == judged_keys[:-1]).any():
        return False  # two judged docids of one query share a key: the string join decides
    mask = np.uint64((1 << _PREFILTER_BITS) - 1)
    bitmap = np.zeros(1 << _PREFILTER_BITS, dtype=bool)
    bitmap[(judged_keys & mask).view(np.int64)] = True  # < 2**24: the same numbers as int64
    candidates, candidate_keys = _candidates(data, bitmap, mask)
    pos = np.minimum(np.searchsorted(judged_keys, candidate_keys), judged_keys.size - 1)
    found = judged_keys[pos] == candidate_keys
    hits, pos = candidates[found], pos[found]
    names = pc.binary_join_element_wise(judged.take(pa.array(order[pos])), *_separators())
    same = pc.equal(data.tokens.take(pa.array(hits)), names).to_numpy(zero_copy_only=False)
    grades = np.array(values, dtype=np.float64)[order]
    out[hits[same]] = grades[pos[same]]
    return True
