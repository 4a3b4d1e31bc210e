"""Compact run storage (issue 30, item 2): stored bytes and costs of one run, old vs new.

`python -m bench.compact_runs [--queries Q] [--depth D]` builds a run like bench/many_runs.py's
(per query: ids "QID-xN", all distinct, so 7,000 x 1,000 has 7M; scores 1000 - rank + U(0, 1)
with 6 decimals, as a TREC file gives them after parsing) in trec_eval order, and prints side by
side, for the old storage (newline-joined docids, raw float64) and the new (formats.run_storage):
bytes per entry and per run, what storing costs the upload (encoding every row) and what reading
costs a full scoring (the docids) and fusion or retention (docids and scores). The run_query
rows' own overhead (ids, row headers, ~40 bytes a query) is the same for both and left out.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.run_bench import MB, SEED
from ndcg_labeler.formats import decode_docids, decode_ranked, encode_ranked


def build(queries: int, depth: int) -> list[tuple[bytes, np.ndarray]]:
    """Each query's (newline-joined docids, float64 scores), best first."""
    rng = np.random.default_rng(SEED)
    lists = []
    for q in range(queries):
        qid = 300_000 + q
        numbers = rng.permutation(depth)
        docids = "\n".join(f"{qid}-x{n}" for n in numbers).encode()
        # k / 1e6 is the float64 nearest the decimal, as float("%.6f") parses it.
        k = (1000 - np.arange(1, depth + 1)) * 1_000_000 + rng.integers(0, 1_000_000, depth)
        order = np.argsort(-k, kind="stable")
        lists.append((docids, k[order] / 1e6))
    return lists


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--depth", type=int, default=1000)
    args = parser.parse_args()
    lists = build(args.queries, args.depth)
    entries = args.queries * args.depth

    start = time.perf_counter()
    old = [(docids, scores.tobytes()) for docids, scores in lists]
    old_store = time.perf_counter() - start
    start = time.perf_counter()
    new = [encode_ranked(docids, scores) for docids, scores in lists]
    new_store = time.perf_counter() - start

    start = time.perf_counter()
    for docids, _ in old:
        bytes(docids)
    old_docids = time.perf_counter() - start
    start = time.perf_counter()
    for docids, _ in new:
        decode_docids(docids)
    new_docids = time.perf_counter() - start
    start = time.perf_counter()
    for docids, scores in old:
        decode_ranked(docids, scores)
    old_both = time.perf_counter() - start
    start = time.perf_counter()
    back = [decode_ranked(docids, scores) for docids, scores in new]
    new_both = time.perf_counter() - start
    exact = all(
        text == docids and np.array_equal(values.view(np.int64), scores.view(np.int64))
        for (text, values), (docids, scores) in zip(back, lists, strict=True)
    )

    def size(rows: list[tuple[bytes, bytes]]) -> tuple[int, int]:
        return sum(len(d) for d, _ in rows), sum(len(s) for _, s in rows)

    (od, os_), (nd, ns) = size(old), size(new)
    print(f"run: {args.queries:,} queries x {args.depth:,} = {entries:,} entries; exact: {exact}")
    print("| | old | new |\n| --- | --- | --- |")
    print(f"| bytes per entry | {(od + os_) / entries:.2f} | {(nd + ns) / entries:.2f} |")
    print(f"| docids, per entry | {od / entries:.2f} | {nd / entries:.2f} |")
    print(f"| scores, per entry | {os_ / entries:.2f} | {ns / entries:.2f} |")
    print(f"| MB per run (lists) | {(od + os_) / MB:.1f} | {(nd + ns) / MB:.1f} |")
    print(f"| storing (upload), s | {old_store:.2f} | {new_store:.2f} |")
    print(f"| reading docids (full scoring), s | {old_docids:.2f} | {new_docids:.2f} |")
    print(f"| reading docids + scores (fusion), s | {old_both:.2f} | {new_both:.2f} |")


if __name__ == "__main__":
    main()
