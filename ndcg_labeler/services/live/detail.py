"""Why a query scores what it does: the run's top k beside the ideal top k, rank by rank."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Query, Run
from ndcg_labeler.scoring import gain_values, log2_ranks
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services.live.engine import live_state, scoring_lock
from ndcg_labeler.services.live.entries import query_docids
from ndcg_labeler.services.live.grades import query_grades
from ndcg_labeler.services.live.options import Resolved, ScoreOptions


@dataclass(frozen=True)
class RankRow:
    """One rank of a ranking: the chunk, its grade and what it adds to DCG."""

    rank: int
    docid: str
    chunk_id: int | None
    title: str | None
    text: str | None
    grade: int | None
    gain: float
    discount: float
    contribution: float
    cumulative: float
    by_machine: bool = False  # the grade is a machine judge's (labels=machine:/fill:)

    @property
    def judged(self) -> bool:
        """The chunk has an (aggregated) grade for this query."""
        return self.grade is not None

    @property
    def in_corpus(self) -> bool:
        """The corpus has the chunk's text (else it was only named by a run, pool or qrels)."""
        return self.text is not None


@dataclass(frozen=True)
class QueryDetail:
    """A query of a run at k: observed and ideal top k, scores and the gap split in two.

    ordering_loss = IDCG@k of the retrieved chunks in their best order − DCG@k;
    recall_loss = IDCG@k (the option's ideal) − that retrieved IDCG@k (0 for ideal=retrieved).
    gap = ordering_loss + recall_loss = IDCG@k − DCG@k.
    """

    run_id: int
    run_name: str
    query_id: int
    qid: str
    text: str
    options: Resolved
    labels_version: int
    missing: bool
    ranked: list[RankRow]
    ideal: list[RankRow]
    dcg: float
    idcg: float
    ndcg: float | None
    idcg_retrieved: float
    judged_at_k: float
    num_rel: int
    num_ret: int
    ndcg_if_unjudged_top: float | None = None
    """NDCG@k if every unjudged chunk of the top k had the scale's top grade."""
    ndcg_condensed: float | None = None
    """NDCG@k with the unjudged chunks removed before the cut at k."""

    @property
    def gap(self) -> float:
        """IDCG@k − DCG@k."""
        return self.idcg - self.dcg

    @property
    def ordering_loss(self) -> float:
        """Gain lost by ordering what was retrieved worse than its best order."""
        return self.idcg_retrieved - self.dcg

    @property
    def recall_loss(self) -> float:
        """Gain lost to judged chunks the run never retrieved (one below k is ordering loss)."""
        return self.idcg - self.idcg_retrieved

    def to_json(self) -> dict[str, Any]:
        """A JSON-friendly dict (the API's and exports' shape)."""

        def rows(items: list[RankRow]) -> list[dict[str, Any]]:
            return [
                {
                    "rank": r.rank,
                    "docid": r.docid,
                    "grade": r.grade,
                    "gain": r.gain,
                    "discount": r.discount,
                    "contribution": r.contribution,
                    "cumulative": r.cumulative,
                    "grade_source": "machine" if r.by_machine else "human",
                }
                for r in items
            ]

        return {
            "run": self.run_name,
            "qid": self.qid,
            **self.options.describe(),
            "dcg": self.dcg,
            "idcg": self.idcg,
            "ndcg": self.ndcg,
            "ndcg_if_unjudged_top": self.ndcg_if_unjudged_top,
            "ndcg_condensed": self.ndcg_condensed,
            "top_grade": self.options.top_grade,
            "gap": self.gap,
            "ordering_loss": self.ordering_loss,
            "recall_loss": self.recall_loss,
            "missing": self.missing,
            "ranked": rows(self.ranked),
            "ideal": rows(self.ideal),
        }


def _rows(
    docids: list[str],
    grades: dict[str, int],
    gain: str,
    chunks: dict[str, Any],
    machine: frozenset[str] = frozenset(),
) -> list[RankRow]:
    """RankRows for docids in rank order, with the scoring module's gains and discounts."""
    values = np.array([grades.get(d, math.nan) for d in docids], dtype=np.float64)
    gains = gain_values(values, gain)  # type: ignore[arg-type]
    discounts = log2_ranks(len(docids))
    terms = gains / discounts
    cumulative = np.cumsum(terms)
    out = []
    for i, docid in enumerate(docids):
        chunk = chunks.get(docid)
        out.append(
            RankRow(
                rank=i + 1,
                docid=docid,
                chunk_id=chunk.id if chunk is not None else None,
                title=chunk.title if chunk is not None else None,
                text=chunk.text if chunk is not None else None,
                grade=grades.get(docid),
                gain=float(gains[i]),
                discount=float(discounts[i]),
                contribution=float(terms[i]),
                cumulative=float(cumulative[i]),
                by_machine=docid in machine,
            )
        )
    return out


def _ideal_order(docids: list[str], grades: dict[str, int]) -> list[str]:
    """Best grades first (ties by docid, for a stable display); unjudged last."""
    return sorted(docids, key=lambda d: (-grades.get(d, -1), d))


def query_detail(run: Run, query: Query, options: ScoreOptions | None = None) -> QueryDetail:
    """The run's top k beside the ideal top k for one query, with the numbers of score_run."""
    options = options or ScoreOptions()
    if query.test_set_id != run.test_set_id:
        raise ServiceError("the query does not belong to the run's test set")
    options.check_kept(run)  # its kept top N would pass for a shorter top k
    k = options.k
    with scoring_lock():
        current, state, resolved, queries = live_state(run, options)
        i = queries.index[query.id]
        a = current.arrays
        values = {
            name: float(a[name][i])
            for name in (
                f"dcg_cut_{k}",
                f"idcg_cut_{k}",
                f"ndcg_cut_{k}",
                f"judged_at_{k}",
                f"ndcg_if_unjudged_top_cut_{k}",
                f"ndcg_condensed_cut_{k}",
            )
        }
        counts = (int(a["num_rel"][i]), int(a["num_ret"][i]))
        has_gain, missing = bool(current.has_gain[i]), bool(current.missing[i])
    resolved = replace(resolved, k=k)
    docids = query_docids(run.id, query.id) or []
    grades = query_grades(run.test_set_id, query.id, resolved.policy, resolved.labels)
    machine: frozenset[str] = frozenset()
    if resolved.labels != "human":
        people = query_grades(run.test_set_id, query.id, resolved.policy)
        machine = frozenset(
            d for d in grades if resolved.labels.startswith("machine:") or d not in people
        )
    if resolved.judged_only:
        docids = [d for d in docids if d in grades]
    ideal_pool = list(grades) if resolved.ideal == "judged" else docids
    ideal_docids = _ideal_order(ideal_pool, grades)[:k]
    retrieved_best = _ideal_order(docids, grades)[:k]
    top = docids[:k]
    chunks = _chunks(run.test_set_id, {*top, *ideal_docids})
    gain = resolved.gain
    ranked_rows = _rows(top, grades, gain, chunks, machine)
    ideal_rows = _rows(ideal_docids, grades, gain, chunks, machine)
    best_rows = _rows(retrieved_best, grades, gain, {})
    ndcg, if_top, condensed = (
        values[f"{name}_{k}"]
        for name in ("ndcg_cut", "ndcg_if_unjudged_top_cut", "ndcg_condensed_cut")
    )
    if missing and has_gain:  # a miss scores 0 (as in score_run)
        ndcg, if_top, condensed = (0.0 if math.isnan(v) else v for v in (ndcg, if_top, condensed))
    return QueryDetail(
        run_id=run.id,
        run_name=run.name,
        query_id=query.id,
        qid=query.qid,
        text=query.text,
        options=resolved,
        labels_version=state.labels_version,
        missing=missing,
        ranked=ranked_rows,
        ideal=ideal_rows,
        dcg=values[f"dcg_cut_{k}"],
        idcg=values[f"idcg_cut_{k}"],
        ndcg=None if math.isnan(ndcg) else ndcg,
        idcg_retrieved=best_rows[-1].cumulative if best_rows else 0.0,
        judged_at_k=values[f"judged_at_{k}"],
        num_rel=counts[0],
        num_ret=counts[1],
        ndcg_if_unjudged_top=None if math.isnan(if_top) else if_top,
        ndcg_condensed=None if math.isnan(condensed) else condensed,
    )


def _chunks(test_set_id: int, docids: set[str]) -> dict[str, Any]:
    """Chunk rows (id, docid, title, text) by docid, for the docids shown."""
    if not docids:
        return {}
    rows = db.session.execute(
        sa.select(Chunk.id, Chunk.docid, Chunk.title, Chunk.text).where(
            Chunk.test_set_id == test_set_id, Chunk.docid.in_(sorted(docids))
        )
    )
    return {r.docid: r for r in rows}
