"""Computing a run's figures: the full scoring from its entries, and the catch-up after grades.

A full scoring joins every ranked entry with the grades read as of a judgment event
(scoring.evaluate_flat); it is the only read of a run's millions of entries. A catch-up
applies the events since: only the queries they touch are re-scored (scoring.evaluate_one),
each from its own ranked list and grades.

A query whose IDCG@k is 0 has NDCG undefined (NaN here); a test-set query missing from the run
is flagged, and scores 0 where it has judged gain (see results.run_scores).
"""

from __future__ import annotations

import numpy as np

from ndcg_labeler.scoring import evaluate_flat, evaluate_one
from ndcg_labeler.services.live.entries import query_docids
from ndcg_labeler.services.live.grades import Events, Grades, query_grades
from ndcg_labeler.services.live.options import Resolved
from ndcg_labeler.services.live.ranked import RankedGrades
from ndcg_labeler.services.live.state import TestSetState
from ndcg_labeler.services.live.store import SAVE_AFTER_QUERIES, ScoreState

# Past this many touched queries, one full scoring is cheaper than one query at a time.
FULL_RESCORE_QUERIES = 300


def score_fully(run_id: int, read: Grades, ranked: RankedGrades, settings: str) -> ScoreState:
    """Score every query of the test set from the run's entries joined with the grades `read`.

    `settings` is the store's key (with machine labels, it names the judge's newest answer
    too). The new state is marked unsaved, so that it is stored at once. Reads nothing from the
    database (an upload runs it on a thread of its own).
    """
    queries, grades = read.queries, read.by_query
    judged = [np.fromiter(grades.get(int(q), {}).values(), dtype=np.float64) for q in queries.ids]
    joffsets = np.zeros(len(judged) + 1, dtype=np.int64)
    np.cumsum([a.size for a in judged], out=joffsets[1:])
    flat_judged = np.concatenate(judged) if judged else np.empty(0)
    resolved = read.resolved
    evaluation = evaluate_flat(
        ranked.grades, ranked.offsets, flat_judged, joffsets, resolved.cutoffs, resolved.scoring
    )
    return ScoreState(
        run_id=run_id,
        settings=settings,
        labels_version=read.state.labels_version,
        max_event_id=read.max_event_id,
        queries_key=read.state.queries_key,
        query_ids=queries.ids.copy(),
        # Measure name -> per-query array (trec_eval names, e.g. ndcg_cut_10, map).
        arrays={name: evaluation.array(name).copy() for name in evaluation.measures()},
        has_gain=np.array([(a > 0).any() for a in judged], dtype=bool),
        judged_any=np.array([a.size > 0 for a in judged], dtype=bool),
        missing=ranked.missing,
        seen=read.seen,
        unsaved=SAVE_AFTER_QUERIES,
    )


def catch_up(
    current: ScoreState, events: Events, state: TestSetState, resolved: Resolved
) -> ScoreState:
    """Apply the judgment events the state has not seen: re-score only the queries they touch,
    in place."""
    index = {int(q): i for i, q in enumerate(current.query_ids.tolist())}
    for qpk in events.touched:
        i = index.get(qpk)
        if i is None:
            continue
        grades = query_grades(state.id, qpk, resolved.policy, resolved.labels)
        docids = [] if current.missing[i] else (query_docids(current.run_id, qpk) or [])
        get = grades.get
        ranked = np.array([get(d, np.nan) for d in docids], dtype=np.float64)
        judged = np.fromiter(grades.values(), dtype=np.float64)
        for name, value in evaluate_one(ranked, judged, resolved.cutoffs, resolved.scoring).items():
            current.arrays[name][i] = value
        current.has_gain[i] = bool((judged > 0).any())
        current.judged_any[i] = judged.size > 0
        current.evaluations += 1
    current.unsaved += len(events.touched)
    current.seen = events.seen
    if events.max_event_id is not None:
        current.max_event_id = max(current.max_event_id, events.max_event_id)
    current.labels_version = state.labels_version
    return current
