"""Compact run storage (issue 30, item 2): stored bytes and costs of one run, old vs new.

`python -m bench.compact_runs [--queries Q] [--depth D]` builds a run like bench/many_runs.py's
(per query: ids "QID-xN", all distinct, so 7,000 x 1,000 has 7M; scores 1000 - rank + U(0, 1)
with 6 decimals, as a TREC file gives them after parsing) in trec_eval order, and prints side by
side, for the old storage (newline-joined docids, raw float64) and the new (formats.run_storage):
bytes per entry and per run, what storing costs the upload (encoding every row) and what reading
costs a full scoring (the docids) and fusion or retention (docids and scores). The run_query
rows' own overhead (ids, row headers, ~40 bytes a query) is the same for both and left out.

Then the run's stored scores (RunScore.data: every measure at the store's cutoffs, per query),
scored with scoring.evaluate_flat against 8 judged chunks a query (grades 0-3) at random ranks
among D + 8, as bench/many_runs.py's qrels: the old .npz against formats.score_storage, and
the archived run (`run archive --keep 10`: top-10 lists and the stored scores) in all.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.run_bench import MB, SEED
from ndcg_labeler.formats import (
    decode_docids,
    decode_ranked,
    decode_score_arrays,
    encode_ranked,
    encode_score_arrays,
    legacy_score_blob,
)
from ndcg_labeler.scoring import evaluate_flat
from ndcg_labeler.services.live.options import STANDARD_CUTOFFS

JUDGED = 8


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
    scores_table(lists, args.queries, args.depth, (od + os_, nd + ns))


def stored_scores(queries: int, depth: int) -> dict[str, np.ndarray]:
    """The arrays the score store keeps for such a run at the default setting."""
    rng = np.random.default_rng(SEED + 1)
    ranked, judged = [], []
    for _ in range(queries):
        grades = rng.integers(0, 4, JUDGED).astype(np.float64)
        column = np.full(depth + JUDGED, np.nan)  # unjudged entries
        column[rng.choice(depth + JUDGED, JUDGED, replace=False)] = grades
        ranked.append(column[:depth])
        judged.append(grades)
    offsets = np.arange(queries + 1, dtype=np.int64) * depth
    joffsets = np.arange(queries + 1, dtype=np.int64) * JUDGED
    found = evaluate_flat(
        np.concatenate(ranked), offsets, np.concatenate(judged), joffsets, STANDARD_CUTOFFS
    )
    arrays = {name: found.array(name).copy() for name in found.measures()}
    has_gain = np.array([(g > 0).any() for g in judged])
    return {
        "meta_query_ids": np.arange(1, queries + 1, dtype=np.int64),
        "meta_has_gain": has_gain,
        "meta_judged_any": np.ones(queries, dtype=bool),
        "meta_missing": np.zeros(queries, dtype=bool),
        "meta_seen": np.arange(128, dtype=np.int64),
        **arrays,
    }


def scores_table(
    lists: list[tuple[bytes, np.ndarray]], queries: int, depth: int, listed: tuple[int, int]
) -> None:
    """The stored scores, old (.npz) and new (formats.score_storage), an archived run, and
    the whole run (`listed`: its lists' bytes, old and new)."""
    arrays = stored_scores(queries, depth)
    start = time.perf_counter()
    old = legacy_score_blob(arrays)
    old_store = time.perf_counter() - start
    start = time.perf_counter()
    new = encode_score_arrays(arrays)
    new_store = time.perf_counter() - start
    start = time.perf_counter()
    decode_score_arrays(old)
    old_read = time.perf_counter() - start
    start = time.perf_counter()
    back = decode_score_arrays(new)
    new_read = time.perf_counter() - start
    exact = set(back) == set(arrays) and all(
        back[n].dtype == a.dtype and back[n].tobytes() == a.tobytes() for n, a in arrays.items()
    )
    top = 0
    for docids, scores in lists:
        kept = encode_ranked(b"\n".join(docids.split(b"\n", 10)[:10]), scores[:10])
        top += sum(map(len, kept))
    print(f"\nstored scores: {len(arrays) - 5} measures x {queries:,} queries; exact: {exact}")
    print("| | old (.npz) | new |\n| --- | --- | --- |")
    print(f"| stored scores, MB per run | {len(old) / MB:.2f} | {len(new) / MB:.2f} |")
    print(f"| storing (every 20 re-scored queries), s | {old_store:.3f} | {new_store:.3f} |")
    print(f"| reading (a process's first score page), s | {old_read:.3f} | {new_read:.3f} |")
    print(f"| archived run (top-10 lists {top / MB:.2f} MB + scores), MB | "
          f"{(top + len(old)) / MB:.2f} | {(top + len(new)) / MB:.2f} |")  # fmt: skip
    print(f"| run in all (lists + stored scores), MB | {(listed[0] + len(old)) / MB:.1f} | "
          f"{(listed[1] + len(new)) / MB:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
