"""trec_eval's ranking: score descending, ties broken by docid descending in byte order."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

from ._ragged import check_offsets, pad, row_blocks


def docid_keys(docids: np.ndarray | Sequence[str]) -> np.ndarray:
    """Integer keys whose order is the byte order of the docids (equal docids, equal keys)."""
    arr = _as_docid_array(docids)
    if arr.dtype.kind == "O":
        arr = arr.astype(str)
    return np.unique(arr, return_inverse=True)[1].astype(np.int64)


def rank_order(docids: np.ndarray | Sequence[str], scores: np.ndarray) -> np.ndarray:
    """Indices that sort one query's documents by score descending, then docid descending."""
    scores = np.asarray(scores, dtype=np.float64)
    return rank_grouped(np.array([0, scores.size]), docids, scores)


def rank_grouped(
    offsets: np.ndarray | Sequence[int],
    docids: np.ndarray | Sequence[str] | pa.Array,
    scores: np.ndarray,
) -> np.ndarray:
    """Permutation sorting each group [offsets[i]:offsets[i+1]] like trec_eval, vectorised.

    `docids` are strings (str or bytes; str order is code-point order, which equals UTF-8
    byte order), a pyarrow string array (only the tied few become Python objects; a newline
    ending each value, as in formats.run_arrow.newline_ended, is ignored) or integer keys
    from `docid_keys`. Returned indices are global: the slice
    [offsets[i]:offsets[i+1]] of the result lists group i's documents best first.
    """
    scores, keys, off = _checked(offsets, docids, scores)
    moves = _tie_moves(off, keys, scores)
    if moves is not None:
        return permutation(scores.size, *moves)
    lengths = np.diff(off)
    perm = np.empty(scores.size, dtype=np.intp)
    for r0, r1 in row_blocks(lengths):
        start, stop = int(off[r0]), int(off[r1])
        perm[start:stop] = start + _rank_block(-scores[start:stop], lengths[r0:r1], keys[start:])
    return perm


def tie_moves(
    offsets: np.ndarray | Sequence[int],
    docids: np.ndarray | Sequence[str] | pa.Array,
    scores: np.ndarray,
) -> tuple[np.ndarray, np.ndarray] | None:
    """rank_grouped's permutation, when it moves few entries, as what it moves: None unless
    every group lists its scores best first already (as most run files do); then the positions
    whose entry trec_eval's tie order (docid descending) changes and the entries they take, so
    that rank_grouped(...) is the identity but for perm[positions] = sources."""
    scores, keys, off = _checked(offsets, docids, scores)
    return _tie_moves(off, keys, scores)


def permutation(size: int, moved: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """The permutation of range(size) that tie_moves describes (perm[moved] = sources)."""
    perm = np.arange(size, dtype=np.intp)
    perm[moved] = sources
    return perm


def _checked(
    offsets: np.ndarray | Sequence[int],
    docids: np.ndarray | Sequence[str] | pa.Array,
    scores: np.ndarray,
) -> tuple[np.ndarray, np.ndarray | pa.Array, np.ndarray]:
    """Scores as float64, docids as keys and offsets as int64, after checking them."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1:
        raise ValueError("scores must be 1-D")
    keys = docids if _is_arrow(docids) else _as_docid_array(docids)
    if len(keys) != scores.size:
        raise ValueError("docids and scores must have the same length")
    if np.isnan(scores).any():
        raise ValueError("scores must not be NaN")
    return scores, keys, check_offsets(offsets, scores.size)


def _tie_moves(
    off: np.ndarray, keys: np.ndarray | pa.Array, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """tie_moves after the checks."""
    if not _scores_descending(off, scores):
        return None
    tied = _within_groups(scores[1:] == scores[:-1], off)  # -0.0 == 0.0 ties, as in trec_eval
    if not tied.any():
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
    positions, run_id = _tie_runs(tied)
    sources = positions[_tie_order(positions, run_id, keys)]
    changed = sources != positions
    return positions[changed], sources[changed]


def _scores_descending(off: np.ndarray, scores: np.ndarray) -> bool:
    """True when every group's scores never increase (ties allowed), in file order."""
    if scores.size < 2:
        return True
    return not _within_groups(scores[1:] > scores[:-1], off).any()


def _within_groups(pairs: np.ndarray, off: np.ndarray) -> np.ndarray:
    """`pairs` (pairs[i]: of entries i and i + 1) with the pairs across two groups cleared."""
    inner = off[1:-1]
    pairs[inner[(inner > 0) & (inner <= pairs.size)] - 1] = False
    return pairs


def _is_arrow(values: object) -> bool:
    """An Arrow array? (Only the run parser makes them: pyarrow is then loaded already.)"""
    arrow = sys.modules.get("pyarrow")
    return arrow is not None and isinstance(values, arrow.Array)


def _rank_block(neg: np.ndarray, lengths: np.ndarray, keys: np.ndarray | pa.Array) -> np.ndarray:
    """Block-local sorting permutation: a row-wise SIMD argsort, then docid order in ties."""
    matrix = pad(neg, lengths, np.nan)  # NaN padding sorts after every real score
    order = np.argsort(matrix, axis=1)
    valid = np.arange(matrix.shape[1]) < lengths[:, None]
    row_start = np.concatenate(([0], np.cumsum(lengths[:-1])))
    local = (order + row_start[:, None])[valid]
    ranked = np.take_along_axis(matrix, order, axis=1)[valid]
    tied = ranked[1:] == ranked[:-1]  # -0.0 == 0.0 ties too, as in trec_eval's comparison
    tied = _within_groups(tied, np.concatenate(([0], np.cumsum(lengths))))
    if tied.any():
        _order_ties(local, tied, keys)
    return local


def _order_ties(local: np.ndarray, tied: np.ndarray, keys: np.ndarray | pa.Array) -> None:
    """Reorder, in place, each run of equal scores by docid descending."""
    positions, run_id = _tie_runs(tied)
    members = local[positions]
    local[positions] = members[_tie_order(members, run_id, keys)]


def _tie_runs(tied: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions in a run of equal scores (tied[i]: i and i + 1 are equal), and the
    number of each one's run."""
    in_run = np.zeros(tied.size + 1, dtype=bool)
    in_run[1:] |= tied
    in_run[:-1] |= tied
    positions = np.flatnonzero(in_run)
    starts = np.ones(positions.size, dtype=bool)
    starts[1:] = ~tied[positions[1:] - 1]
    return positions, np.cumsum(starts)


def _tie_order(members: np.ndarray, run_id: np.ndarray, keys: np.ndarray | pa.Array) -> np.ndarray:
    """The order that sorts `members` (indices into keys) by run, then docid descending."""
    if _is_arrow(keys):
        import pyarrow as pa
        import pyarrow.compute as pc

        # A newline after each id (the stored form) is not part of it: ids hold no whitespace.
        taken = pc.utf8_rtrim(keys.take(pa.array(members)), characters="\n")
        sub = taken.to_numpy(zero_copy_only=False)
    else:
        sub = keys[members]
    if sub.dtype.kind == "O":
        sub = sub.astype(str)  # converted here, for the tied few, not for the whole run
    if sub.dtype.kind in "iu":
        rank = sub.astype(np.int64)
        rank -= rank.min()
    else:
        rank = np.unique(sub, return_inverse=True)[1].astype(np.int64)
    span = int(rank.max()) + 1
    if int(run_id[-1]) < (1 << 62) // span:
        # One int64 argsort of (run, docid descending) beats a two-key lexsort.
        return np.argsort(run_id * span + (span - 1 - rank))
    return np.lexsort((-rank, run_id))


def _as_docid_array(docids: np.ndarray | Sequence[str]) -> np.ndarray:
    """Docids as a numpy array of str (``U`` or object), bytes or integer keys."""
    arr = np.asarray(docids)
    if arr.ndim != 1 or arr.dtype.kind not in "USOiu":
        if arr.size == 0:
            return np.empty(0, dtype=np.int64)
        raise TypeError("docids must be a 1-D array of str, bytes or integer keys")
    return arr
