"""Rank fusion of several runs of one query: reciprocal rank fusion, CombSUM and CombMNZ.

Each input is one run's ranked list for the query as (docid, score) pairs in rank order (best
first). RRF uses ranks only: score(d) = Σ 1 / (k + rank_r(d)), rank counted from 1, over the
runs that retrieved d. CombSUM adds min-max normalised scores, (s − min) / (max − min) per run
and query (a list whose scores are all equal normalises to 1 for every entry); CombMNZ multiplies
that sum by the number of runs that retrieved d. The result is sorted like trec_eval sorts a run:
fused score descending, ties by docid in descending byte order.
"""

from __future__ import annotations

from collections.abc import Sequence

METHODS = ("rrf", "combsum", "combmnz")
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


def fuse(lists: Sequence[Ranked], method: str = "rrf", k: int = RRF_K) -> list[tuple[str, float]]:
    """Fuse one query's ranked lists with `method` (rrf, combsum or combmnz)."""
    if method == "rrf":
        return rrf(lists, k)
    if method == "combsum":
        return combsum(lists)
    if method == "combmnz":
        return combmnz(lists)
    raise ValueError(f"the fusion method must be one of {', '.join(METHODS)}, not '{method}'")
