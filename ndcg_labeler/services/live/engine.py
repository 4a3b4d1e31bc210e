"""Live scoring of runs: per-query DCG/IDCG/NDCG@k and friends that always reflect the grades.

`score_run(run, options)` is the one entry point for views, CLI and API. The figures of a run
under a setting live in the score store (one `run_score` row, see store.py); a process keeps
the ones it used in memory too. On each call one cheap query reads TestSet.labels_version;
when it moved, the judgment events since are read and only the queries they touch are
re-scored (scoring.evaluate_one), reading those queries' ranked lists alone. The run's
millions of entries are read only by the first scoring of a setting (scoring.evaluate_flat).

A query whose IDCG@k is 0 has NDCG undefined (None), left out of the mean and counted; a
test-set query missing from the run scores 0 and is flagged.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np
import sqlalchemy as sa
from flask import current_app

from ndcg_labeler.extensions import db
from ndcg_labeler.models import JudgmentEvent, MachineJudgment, Run, TestSet
from ndcg_labeler.scoring import Evaluation, evaluate_flat, evaluate_one
from ndcg_labeler.services.live import store
from ndcg_labeler.services.live.entries import (
    QuerySet,
    RunData,
    TestSetState,
    load_query_set,
    load_run_data,
    query_docids,
    test_set_state,
)
from ndcg_labeler.services.live.grades import judge_id, query_grades, scoring_qrels
from ndcg_labeler.services.live.options import Resolved, ScoreOptions, resolve_options
from ndcg_labeler.services.live.results import RunScores
from ndcg_labeler.services.live.store import ScoreState

# Event ids come from one counter shared by all test sets; on PostgreSQL a transaction may
# commit after one that took a later id. Re-reading a short tail of ids catches such stragglers.
EVENT_LOOKBACK = 128
# Past this many touched queries, one full scoring is cheaper than one query at a time.
FULL_RESCORE_QUERIES = 300
# Score states a process keeps in memory: at most this many, and at most this many bytes of
# arrays (a state is ~4 MB at 7,000 queries), so that a worker stays bounded however many
# runs, settings and queries it serves; the least recently used go first (the store has them).
MEMORY_STATES = 64
MEMORY_BYTES = 160 * 1024 * 1024
# A state caught up after grades is written back once it is this many re-scored queries ahead
# of its stored row. Writing a few MB on every grade tripled a re-score's time; a process
# that loads the older row catches up the same few queries itself (about 1 ms each).
SAVE_AFTER_QUERIES = 20

_EVENTS_SINCE = (
    sa.select(JudgmentEvent.__table__.c.id, JudgmentEvent.__table__.c.query_id)
    .where(
        JudgmentEvent.__table__.c.test_set_id == sa.bindparam("test_set_id"),
        JudgmentEvent.__table__.c.id > sa.bindparam("after"),
    )
    .order_by(JudgmentEvent.__table__.c.id)
)
_MAX_EVENT = sa.select(sa.func.max(JudgmentEvent.id)).where(
    JudgmentEvent.test_set_id == sa.bindparam("test_set_id")
)


@dataclass
class _Memory:
    """One app's in-process copies; `lock` guards them (one app may serve many threads)."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    states: OrderedDict[tuple[object, ...], ScoreState] = field(default_factory=OrderedDict)
    query_sets: dict[int, QuerySet] = field(default_factory=dict)


_EXTENSION = "ndcg_live_scores"


def _memory() -> _Memory:
    found = current_app.extensions.get(_EXTENSION)
    if found is None:
        found = current_app.extensions.setdefault(_EXTENSION, _Memory())
    return found


def _query_set(memory: _Memory, state: TestSetState) -> QuerySet:
    current = memory.query_sets.get(state.id)
    if current is None or current.key != state.queries_key:
        current = memory.query_sets[state.id] = load_query_set(state)
    return current


def _grades_by_query(
    state: TestSetState, policy: str, queries: QuerySet, labels: str = "human"
) -> dict[int, dict]:
    """{query id: {docid: grade}} of the whole test set under `policy` and label source."""
    test_set = db.session.get_one(TestSet, state.id)
    qrels = scoring_qrels(test_set, policy, labels)
    ids = dict(zip(queries.qids, queries.ids.tolist(), strict=True))
    return {ids[qid]: docs for qid, docs in qrels.items() if qid in ids}


@dataclass(frozen=True)
class Grades:
    """What a full scoring reads besides the run: the test set's grades as of a judgment event.

    The events are read first, so a grade saved while the grades are read is applied again by
    the next catch-up, never missed; `state` is the snapshot they were read under.
    """

    state: TestSetState
    resolved: Resolved
    queries: QuerySet
    max_event_id: int
    seen: frozenset[int]
    by_query: dict[int, dict]


def read_grades(state: TestSetState, resolved: Resolved, queries: QuerySet) -> Grades:
    """The test set's grades under `resolved` (policy, label source) for a full scoring."""
    max_id = int(db.session.scalar(_MAX_EVENT, {"test_set_id": state.id}) or 0)
    seen = frozenset(
        db.session.scalars(
            sa.select(JudgmentEvent.id).where(
                JudgmentEvent.test_set_id == state.id, JudgmentEvent.id > max_id - EVENT_LOOKBACK
            )
        )
    )
    by_query = _grades_by_query(state, resolved.policy, queries, resolved.labels)
    return Grades(state, resolved, queries, max_id, seen, by_query)


def _full(run_id: int, read: Grades, data: RunData, settings: str) -> ScoreState:
    """Score every query of the test set from the run's entries (the only full read).

    `settings` is the store's key (live_state's: with machine labels, it names the judge's
    newest answer too). The new state is marked unsaved, so live_state stores it at once.
    Reads nothing from the database (new_run_state runs it on a thread of its own)."""
    state, resolved, queries, grades = read.state, read.resolved, read.queries, read.by_query
    rows = np.array([data.row_of.get(int(q), -1) for q in queries.ids], dtype=np.int64)
    missing = rows < 0
    ranked = data.all_ranked_grades(grades)
    present = np.maximum(rows, 0)
    starts = np.where(missing, 0, data.row_off[present])
    lengths = np.where(missing, 0, data.row_off[present + 1] - starts)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] != ranked.size or (starts != offsets[:-1]).any():
        # Ragged gather: entry j of test-set query i sits at starts[i] + j in the run's arrays.
        take = np.repeat(starts - offsets[:-1], lengths)
        take += np.arange(offsets[-1])
        ranked = ranked[take]
    # else the run lists every query of the test set, in its order: the entries are in place.
    judged = [np.fromiter(grades.get(int(q), {}).values(), dtype=np.float64) for q in queries.ids]
    joffsets = np.zeros(len(judged) + 1, dtype=np.int64)
    np.cumsum([a.size for a in judged], out=joffsets[1:])
    flat_judged = np.concatenate(judged) if judged else np.empty(0)
    evaluation = evaluate_flat(
        ranked, offsets, flat_judged, joffsets, resolved.cutoffs, resolved.scoring
    )
    return ScoreState(
        run_id=run_id,
        settings=settings,
        labels_version=state.labels_version,
        max_event_id=read.max_event_id,
        queries_key=state.queries_key,
        query_ids=queries.ids.copy(),
        arrays=_as_arrays(evaluation),
        has_gain=np.array([(a > 0).any() for a in judged], dtype=bool),
        judged_any=np.array([a.size > 0 for a in judged], dtype=bool),
        missing=missing,
        seen=read.seen,
        unsaved=SAVE_AFTER_QUERIES,
    )


def _as_arrays(evaluation: Evaluation) -> dict[str, np.ndarray]:
    """Measure name -> per-query array (trec_eval names, e.g. ndcg_cut_10, map)."""
    return {name: evaluation.array(name).copy() for name in evaluation.measures()}


def _rescore(
    current: ScoreState, index: dict[int, int], qpk: int, resolved: Resolved, test_set_id: int
) -> None:
    """Re-score one query from its own ranked list and grades, in place."""
    i = index.get(qpk)
    if i is None:
        return
    grades = query_grades(test_set_id, qpk, resolved.policy, resolved.labels)
    docids = [] if current.missing[i] else (query_docids(current.run_id, qpk) or [])
    get = grades.get
    ranked = np.array([get(d, np.nan) for d in docids], dtype=np.float64)
    judged = np.fromiter(grades.values(), dtype=np.float64)
    for name, value in evaluate_one(ranked, judged, resolved.cutoffs, resolved.scoring).items():
        current.arrays[name][i] = value
    current.has_gain[i] = bool((judged > 0).any())
    current.judged_any[i] = judged.size > 0
    current.evaluations += 1


def _catch_up(
    run: Run, current: ScoreState, state: TestSetState, resolved: Resolved, queries: QuerySet
) -> ScoreState:
    """Apply the judgment events the state has not seen: re-score only the touched queries."""
    rows = db.session.execute(
        _EVENTS_SINCE, {"test_set_id": state.id, "after": current.max_event_id - EVENT_LOOKBACK}
    ).all()
    touched = {qpk for event_id, qpk in rows if event_id not in current.seen}
    if len(touched) > FULL_RESCORE_QUERIES:
        return _full(run, read_grades(state, resolved, queries), None, current.settings)
    index = {int(q): i for i, q in enumerate(current.query_ids.tolist())}
    for qpk in touched:
        _rescore(current, index, qpk, resolved, state.id)
    current.unsaved += len(touched)
    current.seen = frozenset(event_id for event_id, _ in rows)
    if rows:
        current.max_event_id = max(current.max_event_id, rows[-1][0])
    current.labels_version = state.labels_version
    return current


def _machine_version(test_set_id: int, labels: str) -> int:
    judge = judge_id(labels)
    newest = sa.select(sa.func.max(MachineJudgment.id)).where(
        MachineJudgment.test_set_id == test_set_id, MachineJudgment.judge_id == judge
    )
    return int(db.session.scalar(newest) or 0)


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
    resolved = resolve_options(options, state.aggregation, state.threshold)
    settings = store.settings_key(resolved)
    if resolved.labels != "human":
        # Machine labels carry no judgment events: the judge's newest answer id versions them.
        settings += f"@{_machine_version(state.id, resolved.labels)}"
    memory = _memory()
    key = (run.id, run.sha256, run.num_entries, settings)
    with memory.lock:
        queries = _query_set(memory, state)
        current = memory.states.get(key)
        if current is None or current.queries_key != state.queries_key:
            current = store.load(run.id, settings)
        if current is None or current.queries_key != state.queries_key:
            current = _fitting(computed, settings, state)
        if current is None:
            if (
                ahead is None
                or ahead.resolved != resolved
                or ahead.state.queries_key != state.queries_key
            ):
                ahead = read_grades(state, resolved, queries)
            current = _full(run.id, ahead, data or load_run_data(run), settings)
        elif current.labels_version != state.labels_version:
            current = _catch_up(run, current, state, resolved, queries)
        added = key not in memory.states
        memory.states[key] = current
        memory.states.move_to_end(key)
        if added:
            _evict(memory)
        if current.unsaved >= SAVE_AFTER_QUERIES and store.save(current):
            current.unsaved = 0
    return current, state, resolved, queries


def _fitting(computed: ScoreState | None, settings: str, state: TestSetState) -> ScoreState | None:
    """`computed` when it was scored under this setting and these queries, else None. Grades
    given since it was read are caught up like those since any stored state."""
    if computed is None or computed.settings != settings:
        return None
    return computed if computed.queries_key == state.queries_key else None


def _evict(memory: _Memory) -> None:
    """Drop the least recently used states past MEMORY_STATES or MEMORY_BYTES (never the
    newest: it is in use)."""
    sizes = [state.nbytes for state in memory.states.values()]
    total = sum(sizes)
    for size in sizes[:-1]:
        if len(memory.states) <= MEMORY_STATES and total <= MEMORY_BYTES:
            break
        memory.states.popitem(last=False)
        total -= size


def scoring_lock() -> threading.RLock:
    """Hold it while reading a state's arrays (another thread may be catching them up)."""
    return _memory().lock


def score_run(run: Run, options: ScoreOptions | None = None) -> RunScores:
    """The run's current per-query scores at k and its mean (re-scoring only what changed)."""
    options = options or ScoreOptions()
    with scoring_lock():
        current, state, resolved, queries = live_state(run, options)
        return _run_scores(run, current, state, replace(resolved, k=options.k), queries)


def _run_scores(
    run: Run, current: ScoreState, state: TestSetState, resolved: Resolved, queries: QuerySet
) -> RunScores:
    a, k = current.arrays, resolved.k
    ndcg = a[f"ndcg_cut_{k}"].copy()
    # A query the run lacks scores 0 whenever it has judged gain: a miss, not "unknown"
    # (with ideal=retrieved its IDCG is 0, which would otherwise hide the miss).
    ndcg[current.missing & current.has_gain & np.isnan(ndcg)] = 0.0
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
        recip_rank=a["recip_rank"].copy(),
        ap=a["map"].copy(),
        num_rel=a["num_rel"].copy(),
        num_ret=a["num_ret"].copy(),
        missing=current.missing.copy(),
    )


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
    return _full(run_id, read, data, store.settings_key(read.resolved))


def default_grades(test_set_id: int) -> Grades:
    """The grades score_new_run scores against, for reading them ahead (see GradesAhead)."""
    state = test_set_state(test_set_id)
    resolved = resolve_options(ScoreOptions(), state.aggregation, state.threshold)
    memory = _memory()
    with memory.lock:
        queries = _query_set(memory, state)
    return read_grades(state, resolved, queries)


def forget_run(run_id: int) -> None:
    """Drop a deleted run's figures from this process (the database rows go with the run)."""
    memory = _memory()
    with memory.lock:
        for key in [k for k in memory.states if k[0] == run_id]:
            del memory.states[key]


def grades_by_query(
    test_set: TestSet, policy: str | None = None, labels: str = "human"
) -> dict[int, dict[str, int]]:
    """{query id: {docid: grade}} of the whole test set, as scoring uses them."""
    state = test_set_state(test_set.id)
    with scoring_lock():
        queries = _query_set(_memory(), state)
    return _grades_by_query(state, policy or state.aggregation, queries, labels)
