"""Rank fusion of several runs of one query: reciprocal rank fusion, CombSUM and CombMNZ.

Each input is one run's ranked list for the query as (docid, score) pairs in rank order (best
first). RRF uses ranks only: score(d) = Σ 1 / (k + rank_r(d)), rank counted from 1, over the
runs that retrieved d. CombSUM adds min-max normalised scores, (s − min) / (max − min) per run
and query (a list whose scores are all equal normalises to 1 for every entry); CombMNZ multiplies
that sum by the number of runs that retrieved d. The result is sorted like trec_eval sorts a run:
fused score descending, ties by docid in descending byte order.

`fuse` works on one query's lists in plain Python and is the reference; `fuse_arrays` fuses
every query of whole runs at once with numpy and pyarrow and gives the same docids, order and
bit-identical scores (each docid's sum is accumulated from 0.0 run by run, in run order).

References: G. V. Cormack, C. L. A. Clarke and S. Büttcher, "Reciprocal rank fusion outperforms
Condorcet and individual rank learning methods", SIGIR 2009 (RRF, k = 60); E. A. Fox and
J. A. Shaw, "Combination of multiple searches", TREC-2, 1994 (CombSUM, CombMNZ).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .ranking import rank_grouped

if TYPE_CHECKING:
    import pyarrow as pa

FUSION_METHODS = ("rrf", "combsum", "combmnz")
RRF_K = 60

Ranked = Sequence[tuple[str, float]]


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores mapped onto [0, 1] by (s − min) / (max − min); all equal → all 1."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    span = high - low
    return [(s - low) / span for s in scores]


def _ordered(fused: dict[str, float]) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, then docid descending (as bytes)."""
    return sorted(fused.items(), key=lambda item: (-item[1], _desc(item[0])))


def _desc(docid: str) -> tuple[int, ...]:
    """A key that sorts docids in descending byte order (prefixes after longer ids)."""
    return (*(-b for b in docid.encode()), 1)


def rrf(lists: Sequence[Ranked], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: Σ 1 / (k + rank) over the lists that hold the docid."""
    if k < 0:
        raise ValueError(f"the RRF constant k must be at least 0, not {k}")
    fused: dict[str, float] = {}
    for ranked in lists:
        for rank, (docid, _) in enumerate(ranked, start=1):
            fused[docid] = fused.get(docid, 0.0) + 1.0 / (k + rank)
    return _ordered(fused)


def _comb(lists: Sequence[Ranked], mnz: bool) -> list[tuple[str, float]]:
    total: dict[str, float] = {}
    hits: dict[str, int] = {}
    for ranked in lists:
        normalised = min_max([float(score) for _, score in ranked])
        for (docid, _), value in zip(ranked, normalised, strict=True):
            total[docid] = total.get(docid, 0.0) + value
            hits[docid] = hits.get(docid, 0) + 1
    if mnz:
        total = {docid: value * hits[docid] for docid, value in total.items()}
    return _ordered(total)


def combsum(lists: Sequence[Ranked]) -> list[tuple[str, float]]:
    """CombSUM: the sum of each list's min-max normalised score (absent: 0)."""
    return _comb(lists, mnz=False)


def combmnz(lists: Sequence[Ranked]) -> list[tuple[str, float]]:
    """CombMNZ: CombSUM times the number of lists that retrieved the docid."""
    return _comb(lists, mnz=True)


def _check(method: str, k: int) -> None:
    if method not in FUSION_METHODS:
        raise ValueError(
            f"the fusion method must be one of {', '.join(FUSION_METHODS)}, not '{method}'"
        )
    if method == "rrf" and k < 0:
        raise ValueError(f"the RRF constant k must be at least 0, not {k}")


def fuse(lists: Sequence[Ranked], method: str = "rrf", k: int = RRF_K) -> list[tuple[str, float]]:
    """Fuse one query's ranked lists with `method` (rrf, combsum or combmnz)."""
    _check(method, k)
    if method == "rrf":
        return rrf(lists, k)
    if method == "combsum":
        return combsum(lists)
    if method == "combmnz":
        return combmnz(lists)
    raise AssertionError(method)


RankedArrays = tuple[np.ndarray, "pa.Array | np.ndarray", np.ndarray]
"""One run's ranked lists as arrays: (query index, docid, score) per entry. The entries of a
query are contiguous and in rank order (best first); queries may come in any order."""


class Fused(NamedTuple):
    """fuse_arrays' result: per entry, grouped by query index (ascending), best first."""

    query: np.ndarray
    docids: pa.LargeStringArray
    scores: np.ndarray
    hashes: np.ndarray | None  # formats.run_dedup.string_hashes of the docids, when at hand


def fuse_arrays(runs: Sequence[RankedArrays], method: str = "rrf", k: int = RRF_K) -> Fused:
    """Fuse every query of `runs` at once; (query index, docid, fused score) per entry.

    The result is grouped by query index (ascending), each query's entries in `fuse`'s order,
    with `fuse`'s scores bit for bit. Each (query, docid) pair gets one accumulator starting at
    0.0, and the runs add their contributions to it one after the other, in the order given,
    as `fuse`'s dicts do.
    """
    import pyarrow as pa

    _check(method, k)
    columns = [_as_large_string(docids) for _, docids, _ in runs]
    queries = [np.asarray(query, dtype=np.int64) for query, _, _ in runs]
    scores = [np.asarray(score, dtype=np.float64) for _, _, score in runs]
    for query, docids, score in zip(queries, columns, scores, strict=True):
        if not query.ndim == score.ndim == 1 or not query.size == len(docids) == score.size:
            raise ValueError("each run needs one query index, docid and score per entry")
    column = pa.concat_arrays(columns) if columns else pa.array([], pa.large_string())
    query = np.concatenate([*queries, np.empty(0, np.int64)])
    parts = [_contributions(q, s, method, k) for q, s in zip(queries, scores, strict=True)]
    values = np.concatenate([*parts, np.empty(0)])
    slot, fused_query, fused_docids, hashes = _pairs(query, column, columns)
    total = np.zeros(fused_query.size, dtype=np.float64)
    np.add.at(total, slot, values)  # entry by entry, so run by run in order, like the dicts
    if method == "combmnz":
        total = total * np.bincount(slot, minlength=fused_query.size)
    bounds = np.flatnonzero(np.diff(fused_query)) + 1
    offsets = np.concatenate(([0], bounds, [fused_query.size])).astype(np.int64)
    order = rank_grouped(offsets[: 1 if fused_query.size == 0 else None], fused_docids, total)
    return Fused(
        fused_query[order],
        fused_docids.take(pa.array(order)),
        total[order],
        None if hashes is None else hashes[order],
    )


def _contributions(query: np.ndarray, score: np.ndarray, method: str, k: int) -> np.ndarray:
    """What each entry of one run adds to its docid's fused score."""
    first, lengths = _groups(query)
    if method == "rrf":
        ranks = np.arange(query.size, dtype=np.int64) - np.repeat(first, lengths) + 1
        return 1.0 / (k + ranks).astype(np.float64)
    return _min_max_groups(score, first, lengths)


_HASH_BITS = 40  # low bits of a key: the docid's hash; high bits: the query index


def _pairs(
    query: np.ndarray, column: pa.Array, columns: list[pa.Array]
) -> tuple[np.ndarray, np.ndarray, pa.Array, np.ndarray | None]:
    """Number the distinct (query, docid) pairs, in query order: each entry's pair, and each
    pair's query, docid and docid hash (`column`: the runs' `columns` end to end).

    Keys join the query index and a hash of the docid, so one integer sort groups the pairs;
    entries that share a key are then compared as strings, and only if two different docids
    collided is the exact but slower dictionary encoding used instead."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ndcg_labeler.formats import string_hashes

    if query.size and query.min() >= 0 and query.max() < 1 << (63 - _HASH_BITS):
        # Hashed run by run: a run of equally long docids takes string_hashes' fast path.
        hashes = np.concatenate([string_hashes(c) for c in columns])
        keys = (query.astype(np.uint64) << np.uint64(_HASH_BITS)) | (
            hashes >> np.uint64(64 - _HASH_BITS)
        )
        order = np.argsort(keys)
        ordered = keys[order]
        new = np.concatenate(([True], ordered[1:] != ordered[:-1]))
        later = order[~new]
        earlier = order[np.flatnonzero(~new) - 1]
        same = pc.equal(column.take(pa.array(later)), column.take(pa.array(earlier)))
        if later.size == 0 or pc.all(same).as_py():
            slot = np.empty(query.size, dtype=np.int64)
            slot[order] = np.cumsum(new) - 1
            firsts = order[new]
            return slot, query[firsts], column.take(pa.array(firsts)), hashes[firsts]
    encoded = column.dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n_codes = max(len(encoded.dictionary), 1)
    pairs, slot = np.unique(query * n_codes + codes, return_inverse=True)
    return slot, pairs // n_codes, encoded.dictionary.take(pa.array(pairs % n_codes)), None


def _as_large_string(docids: pa.Array | np.ndarray) -> pa.LargeStringArray:
    import pyarrow as pa

    if isinstance(docids, pa.ChunkedArray):
        docids = docids.combine_chunks()
    if isinstance(docids, pa.Array):
        return docids.cast(pa.large_string())
    return pa.array(np.asarray(docids, dtype=object), type=pa.large_string())


def _groups(query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each query's contiguous block; a query split in two is an error."""
    if query.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    first = np.flatnonzero(np.concatenate(([True], query[1:] != query[:-1])))
    if np.unique(query[first]).size != first.size:
        raise ValueError("each query's entries must be contiguous within a run")
    return first, np.diff(np.append(first, query.size))


def _min_max_groups(score: np.ndarray, first: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """`min_max` of every group at once: (s − low) / (high − low), all equal → 1.0."""
    if score.size == 0:
        return score.copy()
    low = np.repeat(np.minimum.reduceat(score, first), lengths)
    high = np.repeat(np.maximum.reduceat(score, first), lengths)
    flat = high == low
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        values = (score - low) / np.where(flat, 1.0, high - low)
    values[flat] = 1.0
    return values
