"""Find a docid twice within one query without a Python object per docid (run fast path).

Each docid's bytes are hashed eight at a time straight from the Arrow buffers (numpy), the
hash is mixed with the query's code, and the keys are sorted: a duplicate can only hide
behind equal keys, and equal keys are then compared as real strings, so the answer is exact.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .filled import indices, string_offsets

_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xC4CEB9FE1A85EC53)
_C3 = np.uint64(0xFF51AFD7ED558CCD)
_MULTIPLIERS = np.array([1, _C1], dtype=np.uint64)
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def string_hashes(array: pa.Array) -> np.ndarray:
    """A 64-bit hash of every string of a (large) string array, equal for equal strings."""
    n = len(array)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    offsets, data_buf = string_offsets(array)
    offsets = offsets.astype(np.int64)
    begin, end = int(offsets[0]), int(offsets[-1])
    # Eight zero bytes of padding let every 8-byte window be read without bounds checks.
    data = np.zeros(end - begin + 8, dtype=np.uint8)
    if data_buf is not None and end > begin:
        data[: end - begin] = np.frombuffer(data_buf, dtype=np.uint8)[begin:end]
    words = np.ndarray((data.size - 7,), dtype="<u8", buffer=data, strides=(1,))
    starts = offsets[:-1] - begin
    lengths = np.diff(offsets)
    last = words.size - 1
    with np.errstate(over="ignore"):
        hashes = lengths.astype(np.uint64) * _C3
        width = int(lengths[0])
        if width > 0 and (lengths == width).all():
            # Fixed-width ids (common): window k of every string is one strided view, no
            # gather; the same arithmetic as below, so equal strings still hash equal.
            for k in range(0, width, 8):
                view = np.ndarray((n,), dtype="<u8", buffer=data, offset=k, strides=(width,))
                hashes = (hashes ^ (view & _MASKS[min(width - k, 8)])) * _C1
            hashes ^= hashes >> np.uint64(29)
            return hashes
        pos, remaining = starts, lengths
        # While most strings still have bytes left, update all of them (a string without
        # bytes left gets a zero word and a multiplier of 1: unchanged); then only the rest.
        while remaining.size and 4 * np.count_nonzero(remaining > 0) >= remaining.size:
            step = np.minimum(np.maximum(remaining, 0), 8)
            word = words[np.minimum(pos, last)] & _MASKS[step]
            hashes = (hashes ^ word) * _MULTIPLIERS[np.minimum(step, 1)]
            pos, remaining = pos + 8, remaining - 8
        idx = np.flatnonzero(remaining > 0)
        pos, remaining = pos[idx], remaining[idx]
        while idx.size:
            word = words[pos] & _MASKS[np.minimum(remaining, 8)]
            hashes[idx] = (hashes[idx] ^ word) * _C1
            more = remaining > 8
            idx, pos, remaining = idx[more], pos[more] + 8, remaining[more] - 8
        hashes ^= hashes >> np.uint64(29)
    return hashes


_PAD = np.uint64((1 << 64) - 1)


_BLOCK = 1 << 18  # hashes sorted per step of none_in_groups (2 MB: no table as large as the run)


def none_in_groups(lengths: np.ndarray, hashes: np.ndarray) -> bool:
    """True when no hash repeats within a group (groups: consecutive runs of `lengths`).

    A run file lists each query's entries together, usually about as many per query: sorting
    each query's row of a padded table is ~4x faster than sorting all the keys at once (each
    row stays in cache), and a few rows at a time need no copy of every hash. False also when
    the padding would cost too much or a hash equals the padding value; the caller then takes
    the exact path (has_duplicates).
    """
    width = int(lengths.max(initial=0))
    if width < 2:
        return True
    full = lengths.size * width == hashes.size  # every query as long: no padding
    if not full and (lengths.size * width > 2 * hashes.size + 4096 or (hashes == _PAD).any()):
        return False
    ends = np.cumsum(lengths)
    step = max(1, _BLOCK // width)
    columns = np.arange(1, width)
    for r0 in range(0, lengths.size, step):
        r1 = min(r0 + step, lengths.size)
        flat = hashes[int(ends[r0 - 1]) if r0 else 0 : int(ends[r1 - 1])]
        if full:
            table = np.sort(flat.reshape(r1 - r0, width), axis=1)
        else:
            table = np.full((r1 - r0, width), _PAD, dtype=np.uint64)
            table[np.arange(width) < lengths[r0:r1, None]] = flat
            table.sort(axis=1)
        repeated = table[:, 1:] == table[:, :-1]
        if not full:
            repeated &= columns < lengths[r0:r1, None]  # pads sort last; ignore them
        if repeated.any():
            return False
    return True


def query_keys(query_codes: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """One 64-bit key per entry from its query's code and its docid's hash (equal pairs, equal
    keys; unequal pairs, almost always unequal keys)."""
    with np.errstate(over="ignore"):
        keys = hashes ^ (query_codes.astype(np.uint64) * _C2)
        return (keys ^ (keys >> np.uint64(31))) * _C1


def first_duplicate(
    query_codes: np.ndarray, hashes: np.ndarray, docids: pa.Array
) -> tuple[int, int] | None:
    """The first entry whose docid occurred before with the same query code, as (index of
    that earlier occurrence, its own index); None when no docid repeats (exact).

    "First" is the lowest index, the line a line-by-line reader stops at.
    """
    keys = query_keys(query_codes, hashes)
    ordered = np.sort(keys)
    equal = ordered[1:] == ordered[:-1]
    if not equal.any():
        return None
    suspects = np.flatnonzero(np.isin(keys, ordered[1:][equal]))  # ascending
    names = docids.take(indices(suspects)).to_pylist()
    seen: dict[tuple[int, str], int] = {}
    for index, code, name in zip(
        suspects.tolist(), query_codes[suspects].tolist(), names, strict=True
    ):
        first = seen.setdefault((code, name), index)
        if first != index:
            return first, index
    return None


def has_duplicates(query_codes: np.ndarray, hashes: np.ndarray, docids: pa.Array) -> bool:
    """True when some docid occurs twice with the same query code (exact)."""
    return first_duplicate(query_codes, hashes, docids) is not None


def merged(ordered: np.ndarray, more: np.ndarray) -> np.ndarray:
    """The sorted union (with repeats) of a sorted array and a sorted array of the same dtype.

    A stable sort of the two joined is timsort for 64-bit keys: it finds the two runs and
    merges them, in time linear in both.
    """
    out = np.concatenate([ordered, more])
    out.sort(kind="stable")
    return out


def found_in(ordered: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which of `keys` occur in the sorted array `ordered` (a mask).

    The keys are looked up in sorted order: each search then starts where the one before
    ended, ~10x faster than random lookups into a large array.
    """
    if not ordered.size or not keys.size:
        return np.zeros(keys.size, dtype=bool)
    order = np.argsort(keys)
    wanted = keys[order]
    at = np.minimum(np.searchsorted(ordered, wanted), ordered.size - 1)
    mask = np.empty(keys.size, dtype=bool)
    mask[order] = ordered[at] == wanted
    return mask
