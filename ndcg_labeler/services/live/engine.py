"""The live engine: `score_run` strings the concepts together, one step after the other.

Every call reads what the score must reflect (state: one cheap query for the test set's
versions), resolves the options against the test set, finds the run's figures under that
setting (store: this process's memory, then the run's `run_score` row), catches them up with
the grades given since or, when there are none, computes them from the run's entries
(figures), keeps them, and hands out a snapshot at k (results).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import cast

from ndcg_labeler.models import Run, TestSet
from ndcg_labeler.services.live.entries import load_run_data
from ndcg_labeler.services.live.figures import FULL_RESCORE_QUERIES, catch_up, score_fully
from ndcg_labeler.services.live.grades import (
    Grades,
    events_since,
    grades_of_queries,
    machine_version,
    query_grades,
    read_grades,
)
from ndcg_labeler.services.live.options import K_CHOICES, Resolved, ScoreOptions, check_kept_depth
from ndcg_labeler.services.live.ranked import RunData
from ndcg_labeler.services.live.results import RunScores, run_scores
from ndcg_labeler.services.live.state import QuerySet, TestSetState, query_set, test_set_state
from ndcg_labeler.services.live.store import ScoreState, memory, remember_summary, settings_key
from ndcg_labeler.services.live.summary import is_current, stored_summary

# The options lists and dashboards use by default (NDCG@10, linear gain, judged ideal).
_DEFAULT = ScoreOptions()


def score_run(run: Run, options: ScoreOptions | None = None) -> RunScores:
    """The run's current per-query scores at k and its mean (re-scoring only what changed)."""
    options = options or ScoreOptions()
    check_kept_depth(run, options.k)
    with scoring_lock():
        current, state, resolved, queries = live_state(run, options)
        return run_scores(run, current, state, replace(resolved, k=options.k), queries)


def live_state(
    run: Run,
    options: ScoreOptions,
    data: RunData | None = None,
    ahead: Grades | None = None,
    computed: ScoreState | None = None,
) -> tuple[ScoreState, TestSetState, Resolved, QuerySet]:
    """The run's scores under `options`, loaded or brought up to date (stored when they moved).

    From memory when current; else from the score store, catching up with the grades; else
    computed from the run's entries (`data`, when the caller has them at hand, saves the read;
    `ahead`, grades read earlier under the same setting and queries, saves that read;
    `computed`, new_run_state's result for this setting and queries, saves the scoring).
    """
    state = test_set_state(run.test_set_id)
    kept = memory()
    with kept.lock:
        queries = query_set(state, kept.query_sets)
        resolved = options.resolve(state.aggregation, state.threshold, state.scale_max)
        settings = settings_key(resolved)
        if resolved.labels != "human":
            # Machine labels carry no judgment events: the judge's newest answer versions them.
            settings += f"@{machine_version(state.id, resolved.labels)}"
        current = kept.find(run, settings, state, computed)
        events = None
        if current is not None and current.labels_version != state.labels_version:
            events = events_since(state.id, current.max_event_id, current.seen)
            if len(events.touched) > FULL_RESCORE_QUERIES:
                current = None  # one full scoring is cheaper than so many one by one
        if current is None:
            if ahead is None or not ahead.fits(state, resolved):
                ahead = read_grades(state, resolved, queries)
            ranked = (data or load_run_data(run)).in_query_order(queries.ids, ahead.by_query)
            current = score_fully(run.id, ahead, ranked, settings)
        elif events is not None:
            current = catch_up(current, events, state, resolved)
        kept.keep(run, current)
        if replace(options, k=_DEFAULT.k) == _DEFAULT and not is_current(
            run.summary, state, settings
        ):
            # Lists read these stored figures (and sort by the mean) instead of scoring every
            # run; they are written only when they moved.
            at_default = replace(resolved, k=_DEFAULT.k)
            result = run_scores(run, current, state, at_default, queries)
            means = _means_at(run, options, (current, state, resolved, queries), K_CHOICES)
            means_at = {str(k): mean for k, mean in zip(K_CHOICES, means, strict=True)}
            remember_summary(run, result.mean_ndcg, stored_summary(state, result, means_at))
    return current, state, resolved, queries


def means_over_k(run: Run, options: ScoreOptions, ks: Sequence[int]) -> list[float | None]:
    """Mean NDCG@k of a run for each k in `ks` (the other options as given), from its stored
    list line when current, else from one read of its scores; None past the depth an
    archived run kept."""
    if replace(options, k=_DEFAULT.k) == _DEFAULT and run.summary:
        stored = run.summary.get("figures", {}).get("means_at", {})
        if all(str(k) in stored for k in ks):
            state = test_set_state(run.test_set_id)
            settings = settings_key(
                options.resolve(state.aggregation, state.threshold, state.scale_max)
            )
            if is_current(run.summary, state, settings):
                kept = run.kept_depth  # archived after these were stored: deeper k are gone
                return [None if kept is not None and k > kept else stored[str(k)] for k in ks]
    with scoring_lock():
        return _means_at(run, options, live_state(run, options), ks)


def _means_at(
    run: Run,
    options: ScoreOptions,
    live: tuple[ScoreState, TestSetState, Resolved, QuerySet],
    ks: Sequence[int],
) -> list[float | None]:
    """Mean NDCG@k for each k of a run's `live_state` under `options` (scored on demand where
    the state lacks k)."""
    current, state, resolved, queries = live
    out: list[float | None] = []
    for k in ks:
        if run.kept_depth is not None and k > run.kept_depth:
            out.append(None)
        elif k in resolved.cutoffs:
            at_k = replace(resolved, k=k)
            out.append(run_scores(run, current, state, at_k, queries).mean_ndcg)
        else:
            out.append(score_run(run, replace(options, k=k)).mean_ndcg)
    return out


def scoring_lock() -> threading.RLock:
    """Hold it while reading a state's arrays (another thread may be catching them up)."""
    return memory().lock


def score_new_run(
    run: Run, data: RunData, ahead: Grades | None = None, computed: ScoreState | None = None
) -> None:
    """Score a run just uploaded by this process under the default setting and store it.

    The upload has the ranked lists at hand, so the first score page (in any process) reads
    the stored figures instead of the run's entries. `ahead`: default_grades, read earlier;
    `computed`: new_run_state of the run on them, scored while the run was written.
    """
    live_state(run, ScoreOptions(), data, ahead, computed)


def new_run_state(run_id: int, read: Grades, data: RunData) -> ScoreState | None:
    """The full scoring score_new_run stores, computed from grades `read` by default_grades
    and the run's entries alone (no database, no app: any thread may run it), or None when
    `read` is not for human labels."""
    if read.resolved.labels != "human":
        return None
    ranked = data.in_query_order(read.queries.ids, read.by_query)
    return score_fully(run_id, read, ranked, settings_key(read.resolved))


def default_grades(test_set_id: int) -> Grades:
    """The grades score_new_run scores against, for reading them ahead (see GradesAhead)."""
    state = test_set_state(test_set_id)
    resolved = ScoreOptions().resolve(state.aggregation, state.threshold, state.scale_max)
    return read_grades(state, resolved, _queries(state))


def forget_run(run_id: int) -> None:
    """Drop a deleted run's figures from this process (the database rows go with the run)."""
    kept = memory()
    with kept.lock:
        kept.forget(run_id)


# Grade sets a process keeps for grades_by_query (a few MB each at 7,000 queries).
KEPT_GRADES = 8


def grades_by_query(
    test_set: TestSet, policy: str | None = None, labels: str = "human"
) -> dict[int, dict[str, int]]:
    """{query id: {docid: grade}} of the whole test set, as scoring uses them (read-only).

    People's grades are kept in the process and caught up with the judgment events since, as
    the scores are: a comparison's flip test reads them on every grade, and re-reading a large
    test set's every judgment took seconds. A machine judge's are read each time.
    """
    state = test_set_state(test_set.id)
    policy = policy or state.aggregation
    if labels != "human":
        return grades_of_queries(state.id, policy, _queries(state), labels)
    kept = memory()
    with kept.lock:
        queries = query_set(state, kept.query_sets)
        resolved = ScoreOptions(policy=policy).resolve(
            state.aggregation, state.threshold, state.scale_max
        )
        key = (state.id, policy)
        found = cast(Grades | None, kept.grades.get(key))
        if found is None or not found.fits(state, resolved):
            found = read_grades(state, resolved, queries)
        elif found.state.labels_version != state.labels_version:
            found = _grades_caught_up(found, state, resolved, queries)
        kept.grades[key] = found
        kept.grades.move_to_end(key)
        while len(kept.grades) > KEPT_GRADES:
            kept.grades.popitem(last=False)
        return found.by_query


def _grades_caught_up(
    found: Grades, state: TestSetState, resolved: Resolved, queries: QuerySet
) -> Grades:
    """`found` with the grades of the queries judged since re-read (a new outer dict: callers
    may still be reading the old one), or read anew when too many moved."""
    events = events_since(state.id, found.max_event_id, found.seen)
    if len(events.touched) > FULL_RESCORE_QUERIES:
        return read_grades(state, resolved, queries)
    by_query = dict(found.by_query)
    for qpk in events.touched:
        if qpk in queries.index:
            by_query[qpk] = query_grades(state.id, qpk, resolved.policy, resolved.labels)
    max_event_id = max(found.max_event_id, events.max_event_id or 0)
    return Grades(state, resolved, queries, max_event_id, events.seen, by_query)


def _queries(state: TestSetState) -> QuerySet:
    """The test set's queries, through this process's memory."""
    kept = memory()
    with kept.lock:
        return query_set(state, kept.query_sets)
