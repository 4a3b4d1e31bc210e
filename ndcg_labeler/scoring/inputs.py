"""Judgments and run entries, and their join into `evaluate`'s inputs (ranked and judged grades)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .ranking import rank_order


class Qrel(NamedTuple):
    """One judgment: the (aggregated) grade of document `docid` for query `qid`."""

    qid: str
    docid: str
    grade: int


class ScoredDoc(NamedTuple):
    """One run entry: the retriever's `score` for document `docid` under query `qid`."""

    qid: str
    docid: str
    score: float


@dataclass(frozen=True, eq=False)
class RunInputs:
    """Per-query inputs of `evaluate`, row i belonging to qids[i].

    ranked[i]: grades in trec_eval rank order after the depth cut, NaN = unjudged;
    docids[i]: the same documents' ids; judged[i]: every judged grade of the query;
    in_run[i]: False when the run has no document for the query (ranked[i] is empty).
    """

    qids: tuple[str, ...]
    ranked: list[np.ndarray]
    docids: list[np.ndarray]
    judged: list[np.ndarray]
    in_run: np.ndarray


def run_inputs(
    qrels: Iterable[Qrel],
    run: Iterable[ScoredDoc],
    *,
    qids: Sequence[str] | None = None,
    depth: int | None = None,
) -> RunInputs:
    """Rank each query's run documents like trec_eval and look up their grades.

    qids: the queries to evaluate, in output order (default: the judged queries in byte
    order, as trec_eval lists them); run queries not listed are ignored, as trec_eval
    ignores run topics without qrels. depth: keep only the first `depth` ranked documents
    (trec_eval's -M). Duplicate (qid, docid) pairs are an error, as in trec_eval.
    """
    if depth is not None and depth < 1:
        raise ValueError(f"depth must be >= 1, not {depth}")
    grades: dict[str, dict[str, int]] = defaultdict(dict)
    for qid, docid, grade in qrels:
        if docid in grades[qid]:
            raise ValueError(f"duplicate judgment for query {qid!r}, document {docid!r}")
        grades[qid][docid] = int(grade)
    by_query: dict[str, tuple[list[str], list[float]]] = defaultdict(lambda: ([], []))
    for qid, docid, score in run:
        docs, scores = by_query[qid]
        docs.append(docid)
        scores.append(float(score))
    order = tuple(sorted(grades)) if qids is None else tuple(qids)

    ranked, docids, judged, in_run = [], [], [], []
    for qid in order:
        query_grades = grades.get(qid, {})
        docs, scores = by_query.get(qid, ([], []))
        if len(set(docs)) != len(docs):
            raise ValueError(f"duplicate document in the run for query {qid!r}")
        ids = np.array(docs, dtype=str)
        ids = ids[rank_order(ids, np.array(scores, dtype=np.float64))][:depth]
        nan = float("nan")
        ranked.append(np.array([query_grades.get(d, nan) for d in ids.tolist()], dtype=float))
        docids.append(ids)
        judged.append(np.array(list(query_grades.values()), dtype=np.int64))
        in_run.append(bool(docs))
    return RunInputs(order, ranked, docids, judged, np.array(in_run, dtype=bool))
