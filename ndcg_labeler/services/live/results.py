"""Score results: what views, CLI and API receive from score_run (a snapshot at one k)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query, Run
from ndcg_labeler.scoring import TInterval, t_interval
from ndcg_labeler.services.live.options import Resolved
from ndcg_labeler.services.live.state import QuerySet, TestSetState
from ndcg_labeler.services.live.store import ScoreState
from ndcg_labeler.services.live.summary import MeanFigures


@dataclass(frozen=True)
class QueryScore:
    """One query's scores at k (ndcg None where undefined: IDCG@k is 0).

    ndcg_if_unjudged_top: NDCG@k if every unjudged chunk of the top k had the scale's top
    grade; ndcg_condensed: NDCG@k of the list without its unjudged chunks (scoring.sensitivity).
    """

    query_id: int
    qid: str
    text: str
    dcg: float
    idcg: float
    ndcg: float | None
    gap: float
    one_minus_ndcg: float | None
    judged_at_k: float
    num_rel: int
    num_ret: int
    precision: float
    recall: float | None
    recip_rank: float | None
    ap: float | None
    missing: bool
    ndcg_if_unjudged_top: float | None = None
    ndcg_condensed: float | None = None

    @property
    def undefined(self) -> bool:
        """NDCG is undefined: no judged gain to normalise by."""
        return self.ndcg is None


def _none(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


@dataclass
class RunScores(MeanFigures):
    """A snapshot of a run's per-query scores at k and the product mean."""

    run_id: int
    run_name: str
    test_set_id: int
    test_set_name: str
    options: Resolved
    labels_version: int
    query_ids: np.ndarray
    qids: list[str]
    dcg: np.ndarray
    idcg: np.ndarray
    ndcg: np.ndarray
    judged_at_k: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    recip_rank: np.ndarray
    ap: np.ndarray
    num_rel: np.ndarray
    num_ret: np.ndarray
    missing: np.ndarray
    ndcg_if_unjudged_top: np.ndarray
    ndcg_condensed: np.ndarray
    judged_any: np.ndarray
    _texts: dict[int, str] | None = field(default=None, repr=False)

    @property
    def k(self) -> int:
        """The cutoff."""
        return self.options.k

    @property
    def queries_in_mean(self) -> int:
        """How many queries the mean covers (those with a defined NDCG@k)."""
        return int(np.count_nonzero(~np.isnan(self.ndcg)))

    @property
    def mean_ndcg(self) -> float | None:
        """Mean NDCG@k over the queries with a defined value; None when there are none."""
        defined = self.ndcg[~np.isnan(self.ndcg)]
        return float(defined.mean()) if defined.size else None

    def _mean_in_mean(self, values: np.ndarray) -> float | None:
        """Mean of `values` over the queries `mean_ndcg` covers (NDCG@k defined)."""
        defined = values[~np.isnan(self.ndcg)]
        return float(defined.mean()) if defined.size else None

    @property
    def mean_if_unjudged_top(self) -> float | None:
        """Mean NDCG@k if every unjudged chunk of each top k had the top grade, over the
        queries of `mean_ndcg`."""
        return self._mean_in_mean(self.ndcg_if_unjudged_top)

    @property
    def mean_condensed(self) -> float | None:
        """Mean NDCG@k of the condensed lists (unjudged chunks removed before the cut at k),
        over the queries of `mean_ndcg`."""
        return self._mean_in_mean(self.ndcg_condensed)

    def sensitivity_json(self) -> dict[str, Any]:
        """The sensitivity means' JSON keys, beside `mean_ndcg`."""
        return {
            "mean_if_unjudged_top": self.mean_if_unjudged_top,
            "mean_condensed": self.mean_condensed,
            "top_grade": self.options.top_grade,
        }

    @property
    def interval(self) -> TInterval:
        """The mean NDCG@k with n and its 95% t interval over the same queries."""
        return t_interval(self.ndcg)

    @property
    def num_queries(self) -> int:
        """Test-set queries scored (in the run or missing from it)."""
        return len(self.qids)

    @property
    def num_undefined(self) -> int:
        """Queries left out of the mean because their IDCG@k is 0."""
        return self.num_queries - self.queries_in_mean

    @property
    def num_missing(self) -> int:
        """Test-set queries the run has no ranking for (they score 0 where defined)."""
        return int(np.count_nonzero(self.missing))

    @property
    def trec_all_mask(self) -> np.ndarray:
        """The queries trec_eval's `all` averages (without -c): judged (in the qrels) and in
        the run, as the trec_eval export writes them."""
        return self.judged_any & ~self.missing

    @property
    def queries_trec_all(self) -> int:
        """How many queries trec_eval's `all` line covers (its num_q)."""
        return int(np.count_nonzero(self.trec_all_mask))

    @property
    def mean_trec_all(self) -> float | None:
        """trec_eval's `all` value of ndcg_cut_k: the mean over its queries, an undefined
        NDCG counting 0; None when it covers no query (trec_eval prints 0 then)."""
        values = self.ndcg[self.trec_all_mask]
        return float(np.nan_to_num(values, nan=0.0).mean()) if values.size else None

    @property
    def mean_judged_at_k(self) -> float | None:
        """Share of the top k that has a grade, averaged over the queries in the run."""
        present = self.judged_at_k[~self.missing]
        return float(present.mean()) if present.size else None

    def texts(self) -> dict[int, str]:
        """Query texts by query id (read when first needed: they are not scores)."""
        if self._texts is None:
            rows = db.session.execute(
                sa.select(Query.id, Query.text).where(Query.test_set_id == self.test_set_id)
            )
            self._texts = {r[0]: r[1] for r in rows}
        return self._texts

    def row(self, i: int) -> QueryScore:
        """The i-th query (in qid order) as a QueryScore."""
        ndcg = _none(self.ndcg[i])
        qpk = int(self.query_ids[i])
        return QueryScore(
            query_id=qpk,
            qid=self.qids[i],
            text=self.texts().get(qpk, ""),
            dcg=float(self.dcg[i]),
            idcg=float(self.idcg[i]),
            ndcg=ndcg,
            gap=float(self.idcg[i] - self.dcg[i]),
            one_minus_ndcg=None if ndcg is None else 1.0 - ndcg,
            judged_at_k=float(self.judged_at_k[i]),
            num_rel=int(self.num_rel[i]),
            num_ret=int(self.num_ret[i]),
            precision=float(self.precision[i]),
            recall=_none(self.recall[i]),
            recip_rank=_none(self.recip_rank[i]),
            ap=_none(self.ap[i]),
            missing=bool(self.missing[i]),
            ndcg_if_unjudged_top=_none(self.ndcg_if_unjudged_top[i]),
            ndcg_condensed=_none(self.ndcg_condensed[i]),
        )

    def by_gap(self) -> list[int]:
        """Row indices, largest gap (IDCG − DCG) first, then by qid."""
        gap = self.idcg - self.dcg
        # qids are already in byte order, so a stable sort on -gap keeps ties by qid.
        return np.argsort(-gap, kind="stable").tolist()

    def rows(self) -> list[QueryScore]:
        """Every query, largest gap first (ties by qid)."""
        return [self.row(i) for i in self.by_gap()]

    def to_json(self) -> dict[str, Any]:
        """The exact JSON of `flask run score --json` and of the API: ndcg null where
        undefined, queries by gap descending, then qid."""
        return {
            "testset": self.test_set_name,
            "run": self.run_name,
            "k": self.k,
            "gain": self.options.gain,
            "ideal": self.options.ideal,
            "judged_only": self.options.judged_only,
            "aggregation": self.options.policy,
            "labels": self.options.shown_labels,
            "mean_ndcg": self.mean_ndcg,
            **self.interval_json(),
            **self.sensitivity_json(),
            **self.means_json(),
            "queries": self._query_dicts(),
        }

    def _query_dicts(self) -> list[dict[str, Any]]:
        """to_json's queries (whole arrays become Python numbers at once: ~7 times faster
        than one numpy scalar at a time, at 7,000 queries)."""
        ndcg, dcg, idcg = self.ndcg.tolist(), self.dcg.tolist(), self.idcg.tolist()
        gap = (self.idcg - self.dcg).tolist()
        judged = self.judged_at_k.astype(np.float64).tolist()
        num_rel = self.num_rel.astype(np.int64).tolist()
        if_top, condensed = self.ndcg_if_unjudged_top.tolist(), self.ndcg_condensed.tolist()
        return [
            {
                "qid": self.qids[i],
                "ndcg": _none(ndcg[i]),
                "ndcg_if_unjudged_top": _none(if_top[i]),
                "ndcg_condensed": _none(condensed[i]),
                "dcg": dcg[i],
                "idcg": idcg[i],
                "gap": gap[i],
                "judged_at_k": judged[i],
                "num_rel": num_rel[i],
            }
            for i in self.by_gap()
        ]


def _unknown(like: np.ndarray) -> np.ndarray:
    """NaN in every query (shown as "—")."""
    return np.full(like.shape, np.nan)


def run_scores(
    run: Run, current: ScoreState, state: TestSetState, resolved: Resolved, queries: QuerySet
) -> RunScores:
    """A snapshot of `current` at `resolved.k` (copies: catching up changes the state in place)."""
    a, k = current.arrays, resolved.k
    # A query the run lacks scores 0 whenever it has judged gain: a miss, not "unknown"
    # (with ideal=retrieved its IDCG is 0, which would otherwise hide the miss).
    missed = current.missing & current.has_gain
    ndcg, if_top, condensed = (
        np.where(missed & np.isnan(values), 0.0, values)
        for values in (
            a[f"ndcg_cut_{k}"],
            a[f"ndcg_if_unjudged_top_cut_{k}"],
            a[f"ndcg_condensed_cut_{k}"],
        )
    )
    return RunScores(
        run_id=run.id,
        run_name=run.name,
        test_set_id=state.id,
        test_set_name=state.name,
        options=resolved,
        labels_version=state.labels_version,
        query_ids=queries.ids,
        qids=queries.qids,
        dcg=a[f"dcg_cut_{k}"].copy(),
        idcg=a[f"idcg_cut_{k}"].copy(),
        ndcg=ndcg,
        judged_at_k=a[f"judged_at_{k}"].copy(),
        precision=a[f"P_{k}"].copy(),
        recall=a[f"recall_{k}"].copy(),
        # An archived run's lists end at its kept depth: whole-list measures are unknown.
        recip_rank=a["recip_rank"].copy() if run.kept_depth is None else _unknown(a["map"]),
        ap=a["map"].copy() if run.kept_depth is None else _unknown(a["map"]),
        num_rel=a["num_rel"].copy(),
        num_ret=a["num_ret"].copy(),
        missing=current.missing.copy(),
        ndcg_if_unjudged_top=if_top,
        ndcg_condensed=condensed,
        judged_any=current.judged_any.copy(),
    )
