"""Whether a comparison's winner rests on unjudged chunks: the flip test at the top grade.

The winner is the sign of mean B − mean A over the compared queries (a difference within
scoring.TIE_TOLERANCE is a tie). The top-grade world gives every unjudged chunk in the top k
of EITHER run the scale's top grade, as if it had been judged so: those grades join the
query's judged grades, so both runs' ideals grow by the same chunks, and each run's NDCG@k is
then computed on its own top k (scoring.evaluate on the changed grades; the same world for
both runs, which per-run values alone would not give when one run's unjudged chunk is absent
from the other's top k). The comparison is robust when the winner (or the tie) is the same in
both worlds; `flips_if_unjudged_top` is its negation; `unjudged_pairs` counts the distinct
(query, chunk) pairs the top-grade world changes, over the compared queries.

Two settings read it differently. With `judged_only`, the top-grade world's chunks are judged
and so stay in the list: its values are those of the uncondensed top k. With
`ideal=retrieved` a run's ideal comes from its whole retrieved list, which the top k does not
show: each run's own top-grade value (scoring.sensitivity, its unjudged top k only) is used.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from flask import current_app

from ndcg_labeler.models import Run
from ndcg_labeler.scoring import TIE_TOLERANCE, Options, evaluate
from ndcg_labeler.services import live


@dataclass(frozen=True)
class Robustness:
    """B against A today and with every unjudged top-k chunk of either run at the top grade."""

    robust: bool
    unjudged_pairs: int
    mean_a_if_top: float | None
    mean_b_if_top: float | None
    delta: float | None
    delta_if_top: float | None

    @property
    def flips_if_unjudged_top(self) -> bool:
        """The winner (or the tie) changes when the unjudged chunks get the top grade."""
        return not self.robust

    @property
    def winner(self) -> str:
        """ "A", "B" or "tie" today."""
        return _winner(self.delta)

    @property
    def winner_if_top(self) -> str:
        """ "A", "B" or "tie" in the top-grade world."""
        return _winner(self.delta_if_top)


def _winner(delta: float | None) -> str:
    if delta is None or abs(delta) <= TIE_TOLERANCE:
        return "tie"
    return "B" if delta > 0 else "A"


# Flip tests a process keeps: each reads both runs' top k (every ranked list of the runs), which
# a comparison page polled every second must not repeat while neither runs nor grades moved.
_KEPT = 32
_LOCK = threading.Lock()


def pair_robustness(
    runs: Sequence[Run], results: Sequence[live.RunScores], index: np.ndarray
) -> list[Robustness]:
    """Each run against the first (`index`: the compared rows), today and in the top-grade
    world of the two; kept in this process until the runs, the grades or the setting change
    (people's grades only: a machine judge's answers move no labels version)."""
    if results[0].options.labels != "human":
        return _pair_robustness(runs, results, index)
    key = (
        tuple((run.id, run.sha256, run.num_entries) for run in runs),
        repr(results[0].options),
        results[0].labels_version,
        hashlib.sha256(results[0].query_ids[index].tobytes()).hexdigest(),
    )
    kept: OrderedDict[tuple[object, ...], list[Robustness]] = current_app.extensions.setdefault(
        "ndcg_flip_tests", OrderedDict()
    )
    with _LOCK:
        found = kept.get(key)
    if found is None:
        found = _pair_robustness(runs, results, index)
        with _LOCK:
            kept[key] = found
            while len(kept) > _KEPT:
                kept.popitem(last=False)
    return found


def _pair_robustness(
    runs: Sequence[Run], results: Sequence[live.RunScores], index: np.ndarray
) -> list[Robustness]:
    """pair_robustness, computed."""
    first = results[0]
    o = first.options
    k, top = o.k, o.top_grade
    grades = live.grades_by_query(runs[0].test_set, o.policy, o.labels)
    lists = [live.top_lists(run, k) for run in runs]
    query_ids = [int(q) for q in first.query_ids[index].tolist()]
    unjudged = [_unjudged(found, grades, query_ids) for found in lists]
    options = Options(o.gain, o.ideal, False, o.threshold, top)  # type: ignore[arg-type]
    out = []
    for n in range(1, len(runs)):
        union = [a | b for a, b in zip(unjudged[0], unjudged[n], strict=True)]
        if o.ideal == "retrieved":
            a_top = first.ndcg_if_unjudged_top[index]
            b_top = results[n].ndcg_if_unjudged_top[index]
        else:
            judged = [
                np.array([*grades.get(q, {}).values(), *[top] * len(u)], dtype=np.float64)
                for q, u in zip(query_ids, union, strict=True)
            ]
            a_top = _ndcg(lists[0], grades, query_ids, judged, k, options)
            b_top = _ndcg(lists[n], grades, query_ids, judged, k, options)
        today = (first.ndcg[index], results[n].ndcg[index])
        out.append(robustness(*today, a_top, b_top, sum(len(u) for u in union)))
    return out


def _unjudged(
    lists: dict[int, list[str]], grades: dict[int, dict[str, int]], query_ids: list[int]
) -> list[set[str]]:
    """Per query, the unjudged chunks of a run's top k."""
    out = []
    for q in query_ids:
        judged = grades.get(q, {})
        out.append({d for d in lists.get(q, []) if d not in judged})
    return out


def _ndcg(
    lists: dict[int, list[str]],
    grades: dict[int, dict[str, int]],
    query_ids: list[int],
    judged: list[np.ndarray],
    k: int,
    options: Options,
) -> np.ndarray:
    """NDCG@k of a run's top k with its unjudged chunks at the top grade, against `judged`."""
    top = float(options.top_grade)
    ranked = []
    for q in query_ids:
        get = grades.get(q, {}).get
        ranked.append(np.array([get(d, top) for d in lists.get(q, [])], dtype=np.float64))
    # A compared query has judged gain, so IDCG@k > 0: never undefined (a run that lacks the
    # query scores 0 there, as today).
    return evaluate(ranked, judged, (k,), options).ndcg_cut[k]


def robustness(
    a: np.ndarray, b: np.ndarray, a_top: np.ndarray, b_top: np.ndarray, pairs: int
) -> Robustness:
    """B against A (per-query values today and in the top-grade world) as a Robustness."""
    delta = float(b.mean() - a.mean()) if a.size else None
    delta_top = float(b_top.mean() - a_top.mean()) if a.size else None
    mean_a = float(a_top.mean()) if a.size else None
    mean_b = float(b_top.mean()) if a.size else None
    robust = _winner(delta) == _winner(delta_top)
    return Robustness(robust, pairs, mean_a, mean_b, delta, delta_top)
