"""Six queries, one relevant chunk each (grade 1), and runs that put it at a chosen rank.

NDCG@10 of a query whose only relevant chunk is at rank p is 1 / log2(p + 1) (IDCG = 1):
rank 1 -> 1, rank 2 -> 1/log2(3) = 0.6309..., rank 3 -> 1/log2(4) = 0.5."""

from __future__ import annotations

import math

QIDS = [f"q{i}" for i in range(1, 7)]
QUERIES = {qid: f"topic {qid}" for qid in QIDS}
QRELS = [(qid, f"r{qid}", 1) for qid in QIDS]
CORPUS = {f"r{qid}": f"relevant to {qid}" for qid in QIDS}
GOOD = [1, 1, 1, 1, 1, 1]
WORSE = [2, 2, 2, 3, 3, 3]
SLIGHTLY_BETTER = [1, 2, 2, 3, 3, 3]


def ndcg(rank: int) -> float:
    """Hand formula: one relevant chunk of grade 1 at `rank`, IDCG 1."""
    return 1 / math.log2(rank + 1)


def ranked(qid: str, rank: int) -> list[str]:
    """Three docids for the query with its relevant chunk at `rank` (best first)."""
    docs = [f"{qid}-other{n}" for n in (1, 2)]
    docs.insert(rank - 1, f"r{qid}")
    return docs


def trec(ranks: list[int]) -> str:
    """A TREC run with each query's relevant chunk at the given rank."""
    lines = []
    for qid, rank in zip(QIDS, ranks, strict=True):
        for n, doc in enumerate(ranked(qid, rank), start=1):
            lines.append(f"{qid} Q0 {doc} {n} {10 - n}.0 test\n")
    return "".join(lines)
