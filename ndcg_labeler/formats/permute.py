"""A permutation that moves few entries, applied in place instead of by a full copy.

Most run files list each query best first, so trec_eval's order differs from the file's only
where tied scores are not in docid order (scoring.tie_moves). Gathering every entry into new
arrays would copy a run's hundreds of MB, and map as many new pages, to move a few thousand.

A permutation is given by what it moves: `moved`, the ascending positions whose entry changes,
and `sources`, the positions their entries come from (perm[moved] = sources, perm[i] = i
elsewhere).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .filled import indices, string_offsets


def permute_values(values: np.ndarray, moved: np.ndarray, sources: np.ndarray) -> None:
    """values becomes values[perm], in place."""
    values[moved] = values[sources]


def permute_strings(strings: pa.Array, moved: np.ndarray, sources: np.ndarray, limit: int) -> bool:
    """`strings` (a large string or binary array without nulls) becomes strings.take(perm),
    rewritten in place. False (and left alone) when its buffers are read-only or the ranges to
    rewrite hold more than `limit` entries (a copy is then as cheap)."""
    offsets_buf, data_buf = strings.buffers()[1:3]
    if (
        not (pa.types.is_large_string(strings.type) or pa.types.is_large_binary(strings.type))
        or strings.null_count
        or strings.offset
        or data_buf is None
        or not (offsets_buf.is_mutable and data_buf.is_mutable)
    ):
        return False
    if moved.size == 0:
        return True
    firsts, lasts = _segments(moved, sources)
    positions = _ranges(firsts, lasts)
    if positions.size > limit:
        return False
    taking = positions.copy()  # perm over the ranges: entries that stay take their own
    taking[np.searchsorted(positions, moved)] = sources
    taken = strings.take(indices(taking))  # the ranges' strings in their new order
    new_offsets, new_data = string_offsets(taken)
    offsets, _ = string_offsets(strings)  # views of the buffers: written below
    # Each range's bytes span the same place before and after: copy the taken bytes over it.
    range_start = offsets[firsts]
    range_bytes = offsets[lasts + 1] - range_start
    into = _ranges(range_start, range_start + range_bytes - 1)
    begin = int(new_offsets[0])
    data = np.frombuffer(data_buf, dtype=np.uint8)
    data[into] = np.frombuffer(new_data, dtype=np.uint8)[begin : begin + into.size]
    # Each string's new end: its range's start plus the range's taken bytes up to it.
    taken_before = np.concatenate(([0], np.cumsum(range_bytes)[:-1]))
    shift = np.repeat(range_start - taken_before, lasts - firsts + 1)
    offsets[positions + 1] = new_offsets[1:] - begin + shift
    return True


def _segments(moved: np.ndarray, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and last position of the fewest ranges that hold every moved entry, each taking
    its entries from itself. (A prefix [0, i] takes its entries from itself when none comes
    from beyond i; entries that stay never reach further.)"""
    reach = np.maximum.accumulate(sources)
    ends = np.flatnonzero(reach <= moved)
    starts = np.concatenate(([0], ends[:-1] + 1))
    return moved[starts], moved[ends]


def _ranges(firsts: np.ndarray, lasts: np.ndarray) -> np.ndarray:
    """Every position of the ranges [firsts[k], lasts[k]], in order."""
    sizes = lasts - firsts + 1
    before = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return np.repeat(firsts - before, sizes) + np.arange(int(sizes.sum()))
