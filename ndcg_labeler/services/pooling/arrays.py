"""Pooling's arithmetic over arrays: every run's top entries as (query, docid code, rank) rows.

At 7,000 queries x depth 50 x several runs, pooling looks at millions of (query, docid) entries;
a dict per entry took seconds. Here docids are dictionary-encoded once (pyarrow), an entry is
the int64 key query * n_docids + code, and best ranks, judged and queued flags and coverage
are numpy operations. No database access: pooling.plan_pool feeds it and asks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class Entries:
    """Every chosen-or-not run's top entries, in run order, with their judged flags."""

    run: np.ndarray  # index of the entry's run
    query: np.ndarray  # query id
    code: np.ndarray  # docid code (index into `docids`)
    rank: np.ndarray  # 1-based rank within the run's query
    key: np.ndarray  # query * len(docids) + code
    judged: np.ndarray  # graded now
    docids: pa.Array  # code -> docid
    order: np.ndarray  # code -> position of its docid in sorted (string) order
    queries: list[np.ndarray]  # per run, the query ids it ranks (each once)

    @classmethod
    def build(
        cls, tops: Sequence[dict[int, list[str]]], grades: dict[int, dict[str, int]]
    ) -> Entries:
        """From per-run {query id: top docids} and the grades {query id: {docid: grade}}."""
        lengths = [np.fromiter((len(v) for v in top.values()), np.int64, len(top)) for top in tops]
        run = np.repeat(np.arange(len(tops)), [int(n.sum()) for n in lengths])
        query = np.concatenate(
            [
                np.repeat(np.fromiter(top, np.int64, len(top)), n)
                for top, n in zip(tops, lengths, strict=True)
            ]
            or [np.empty(0, np.int64)]
        )
        rank = np.concatenate([_ranks(n) for n in lengths] or [np.empty(0, np.int64)])
        judged_queries = np.repeat(
            np.fromiter(grades, np.int64, len(grades)),
            np.fromiter((len(g) for g in grades.values()), np.int64, len(grades)),
        )
        texts = chain(
            chain.from_iterable(chain.from_iterable(top.values()) for top in tops),
            chain.from_iterable(grades.values()),
        )
        encoded = pc.dictionary_encode(pa.array(list(texts), pa.large_string()))
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        docids = encoded.dictionary
        size = max(len(docids), 1)
        entries = run.size
        key = query * size + codes[:entries]
        judged_keys = judged_queries * size + codes[entries:]
        order = np.empty(len(docids), np.int64)
        order[pc.sort_indices(docids).to_numpy()] = np.arange(len(docids))
        queries = [np.fromiter(top, np.int64, len(top)) for top in tops]
        return cls(
            run=run,
            query=query,
            code=codes[:entries],
            rank=rank,
            key=key,
            judged=member(key, judged_keys),
            docids=docids,
            order=order,
            queries=queries,
        )

    def best(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(key, query, code, best rank) of every distinct entry key under `mask`."""
        idx = np.flatnonzero(mask)
        idx = idx[np.lexsort((self.rank[idx], self.key[idx]))]
        first = np.ones(idx.size, dtype=bool)
        first[1:] = self.key[idx][1:] != self.key[idx][:-1]
        idx = idx[first]
        return self.key[idx], self.query[idx], self.code[idx], self.rank[idx]

    def mean_share(self, run: int, counted: np.ndarray, depth: int) -> float | None:
        """Mean over the run's queries of the share of its top `depth` where `counted` holds."""
        queries = self.queries[run]
        if not queries.size:
            return None
        mine = self.run == run
        return float(np.count_nonzero(counted & mine)) / depth / queries.size


def _ranks(lengths: np.ndarray) -> np.ndarray:
    """1..n for each n in `lengths`, concatenated."""
    total = int(lengths.sum())
    if not total:
        return np.empty(0, np.int64)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total, dtype=np.int64) - starts + 1


def member(values: np.ndarray, of: np.ndarray) -> np.ndarray:
    """values ∈ of, elementwise, for int64 keys (a sort and a binary search: np.isin hashes
    both arrays, several times slower at hundreds of thousands of keys)."""
    if not of.size:
        return np.zeros(values.shape, dtype=bool)
    ordered = np.sort(of)
    found = np.minimum(np.searchsorted(ordered, values), ordered.size - 1)
    return ordered[found] == values


def pair_keys(query: np.ndarray, chunk: np.ndarray, width: int) -> np.ndarray:
    """query * width + chunk: one int64 per (query id, chunk id) pair (chunk ids < width)."""
    return query.astype(np.int64) * width + chunk.astype(np.int64)
