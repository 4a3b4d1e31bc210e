"""Live scoring of runs: per-query DCG/IDCG/NDCG@k and friends that always reflect the grades.

`score_run(run, options)` is the one entry point for views, CLI and API. Per process it keeps,
for each run and scoring setting, every measure of every test-set query at all standard cutoffs
(scoring.evaluate_flat). On each call it compares TestSet.labels_version (one cheap query); when
it moved, only the queries whose grades changed since are re-scored (scoring.evaluate_one) from
the run's cached ranked docids: the run is never re-read.

Product mean (DESIGN.md): a query whose IDCG@k is 0 has NDCG undefined (None), left out of the
mean and counted; a test-set query missing from the run scores 0 and is flagged.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ndcg_labeler.models import Run
from ndcg_labeler.scoring import DEFAULT_CUTOFFS, evaluate_flat, evaluate_one, trec_all
from ndcg_labeler.scoring.evaluation import COUNT_MEASURES, Evaluation
from ndcg_labeler.services import score_cache as cache
from ndcg_labeler.services.score_grades import GradeState, grade_state
from ndcg_labeler.services.score_results import (
    QueryScore,
    Resolved,
    RunScores,
    ScoreOptions,
    resolve_options,
)

__all__ = [
    "QueryScore",
    "RunScores",
    "ScoreOptions",
    "forget_run",
    "remember_run",
    "score_run",
    "trec_eval_lines",
]

forget_run = cache.forget_run
remember_run = cache.remember_run


class _RankedGrades:
    """The grade of every ranked entry of one run under one policy (NaN = unjudged).

    One array of the run's size, shared by every setting (k, gain, ideal...) of that run and
    policy; it catches up with the grades only when a full evaluation needs it.
    """

    def __init__(self, data: cache.RunData, grades: GradeState) -> None:
        self._load(data, grades)

    def _load(self, data: cache.RunData, grades: GradeState) -> None:
        self.grades = grades
        self.generation = grades.generation
        self.values = data.all_ranked_grades(grades.grades)

    def current(self, data: cache.RunData, grades: GradeState) -> np.ndarray:
        """The values for the grades' current generation."""
        if grades is self.grades and grades.generation == self.generation:
            return self.values
        changed = grades.changed_since(self.generation) if grades is self.grades else None
        if changed is None:
            self._load(data, grades)
            return self.values
        for qpk in changed:
            row = data.row_of.get(qpk)
            if row is not None:
                docs = grades.grades.get(qpk, {})
                self.values[data.row_off[row] : data.row_off[row + 1]] = data.ranked_grades(
                    row, docs
                )
        self.generation = grades.generation
        return self.values


def _ranked_grades(data: cache.RunData, grades: GradeState) -> np.ndarray:
    """The shared ranked grades of a run under the grades' policy (created on first use)."""
    store = cache.caches().live
    key = (data.run_id, "ranked-grades", grades.policy)  # run id first: dropped with the run
    shared = store.get(key)
    if shared is None:
        shared = store[key] = _RankedGrades(data, grades)
        return shared.values
    return shared.current(data, grades)


class _LiveScores:
    """Every measure of every test-set query for one run and one setting, kept current."""

    def __init__(
        self,
        data: cache.RunData,
        grades: GradeState,
        queries: cache.QuerySet,
        resolved: Resolved,
    ) -> None:
        self.data_key = data.key
        self.run_id = data.run_id
        self.run_name = data.name
        self.queries = queries
        self.resolved = resolved
        self.options = resolved.scoring
        self.cutoffs = resolved.cutoffs
        # Row of each test-set query in the run (-1: the run has no ranking for it).
        self.rows = np.array([data.row_of.get(int(q), -1) for q in queries.ids], dtype=np.int64)
        self.missing = self.rows < 0
        self.evaluations = 0  # evaluate_one calls since the last full evaluation (for tests)
        self._full(data, grades)

    def _full(self, data: cache.RunData, grades: GradeState) -> None:
        """Map every ranked docid to its grade and evaluate all queries at once."""
        self.grades = grades
        self.generation = grades.generation
        ranked = _ranked_grades(data, grades)
        present = np.maximum(self.rows, 0)
        starts = np.where(self.missing, 0, data.row_off[present])
        lengths = np.where(self.missing, 0, data.row_off[present + 1] - starts)
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # Ragged gather: entry j of test-set query i sits at starts[i] + j in the run's arrays.
        take = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
        judged = [grades.judged_grades(int(q)) for q in self.queries.ids]
        joffsets = np.zeros(len(judged) + 1, dtype=np.int64)
        np.cumsum([a.size for a in judged], out=joffsets[1:])
        flat_judged = np.concatenate(judged) if judged else np.empty(0)
        evaluation = evaluate_flat(
            ranked[take], offsets, flat_judged, joffsets, self.cutoffs, self.options
        )
        self.arrays = _as_arrays(evaluation)
        self.has_gain = np.array([(a > 0).any() for a in judged], dtype=bool)

    def sync(self, data: cache.RunData, grades: GradeState) -> None:
        """Catch up with the grades' generation, re-scoring only the queries that changed."""
        if grades is self.grades and grades.generation == self.generation:
            return
        changed = grades.changed_since(self.generation) if grades is self.grades else None
        if changed is None:
            self._full(data, grades)
            return
        for qpk in changed:
            self._rescore(qpk, data, grades)
        self.generation = grades.generation

    def _rescore(self, qpk: int, data: cache.RunData, grades: GradeState) -> None:
        """Re-score one query with evaluate_one and write its values in place."""
        i = self.queries.index.get(qpk)
        if i is None:
            return
        row = int(self.rows[i])
        docs = grades.grades.get(qpk, {})
        ranked = data.ranked_grades(row, docs) if row >= 0 else np.empty(0)
        judged = grades.judged_grades(qpk)
        values = evaluate_one(ranked, judged, self.cutoffs, self.options)
        for name, value in values.items():
            self.arrays[name][i] = value
        self.has_gain[i] = bool((judged > 0).any())
        self.evaluations += 1


def _as_arrays(evaluation: Evaluation) -> dict[str, np.ndarray]:
    """Measure name -> per-query array (trec_eval names, e.g. ndcg_cut_10, map)."""
    return {name: evaluation.array(name).copy() for name in evaluation.measures()}


def _query_set(state: cache.TestSetState) -> cache.QuerySet:
    store = cache.caches().query_sets
    current = store.get(state.id)
    if current is None or current.key != state.queries_key:
        current = cache.load_query_set(state)
        store[state.id] = current
    return current


def live_state(run: Run, options: ScoreOptions) -> tuple[_LiveScores, cache.TestSetState]:
    """The run's live scores under `options`, created or brought up to date (hold the lock)."""
    state = cache.test_set_state(run.test_set_id)
    resolved = resolve_options(options, state.aggregation, state.threshold)
    queries = _query_set(state)
    grades = grade_state(state, resolved.policy, queries)
    found = cache.caches()
    data = found.runs.get(run, state.runs_version)
    key = (
        data.run_id,
        resolved.policy,
        resolved.threshold,
        resolved.gain,
        resolved.ideal,
        resolved.judged_only,
        resolved.cutoffs,
    )
    live = found.live.get(key)
    if live is None or live.data_key != data.key or live.queries is not queries:
        live = _LiveScores(data, grades, queries, resolved)
        found.live[key] = live
    else:
        live.sync(data, grades)
    return live, state


def score_run(run: Run, options: ScoreOptions | None = None) -> RunScores:
    """The run's current per-query scores at k and its mean (re-scoring only what changed)."""
    options = options or ScoreOptions()
    with cache.caches().lock:
        live, state = live_state(run, options)
        a, k = live.arrays, options.k
        ndcg = a[f"ndcg_cut_{k}"].copy()
        # A query the run lacks scores 0 whenever it has judged gain: a miss, not "unknown"
        # (with ideal=retrieved its IDCG is 0, which would otherwise hide the miss).
        ndcg[live.missing & live.has_gain & np.isnan(ndcg)] = 0.0
        return RunScores(
            run_id=live.run_id,
            run_name=live.run_name,
            test_set_id=state.id,
            test_set_name=state.name,
            # The live state is shared by every k it covers: report the k asked for.
            options=replace(live.resolved, k=k),
            labels_version=state.labels_version,
            query_ids=live.queries.ids,
            qids=live.queries.qids,
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
            missing=live.missing.copy(),
        )


def _evaluation(arrays: dict[str, np.ndarray], cutoffs: tuple[int, ...]) -> Evaluation:
    """Rebuild a scoring.Evaluation (for trec_all) from the live arrays."""

    def cut(prefix: str) -> dict[int, np.ndarray]:
        return {k: arrays[f"{prefix}_{k}"] for k in cutoffs}

    return Evaluation(
        cutoffs=cutoffs,
        ndcg=arrays["ndcg"],
        dcg=arrays["dcg"],
        idcg=arrays["idcg"],
        ndcg_cut=cut("ndcg_cut"),
        dcg_cut=cut("dcg_cut"),
        idcg_cut=cut("idcg_cut"),
        P=cut("P"),
        recall=cut("recall"),
        judged_at=cut("judged_at"),
        recip_rank=arrays["recip_rank"],
        ap=arrays["map"],
        num_rel=arrays["num_rel"],
        num_rel_ret=arrays["num_rel_ret"],
        num_ret=arrays["num_ret"],
    )


def trec_measures(k: int) -> list[str]:
    """The measures `--trec` prints, in trec_eval's order (its cutoffs, plus k)."""
    cuts = sorted({*DEFAULT_CUTOFFS, k})
    return [
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
        "recip_rank",
        *(f"P_{c}" for c in cuts),
        *(f"recall_{c}" for c in cuts),
        "ndcg",
        *(f"ndcg_cut_{c}" for c in cuts),
    ]


def _trec_format(measure: str, qid: str, value: float) -> str:
    """One line as trec_eval prints it: name padded to 22, tab, qid, tab, value."""
    if measure in COUNT_MEASURES or measure == "num_q":
        return f"{measure:<22}\t{qid}\t{round(value)}"
    return f"{measure:<22}\t{qid}\t{value:.4f}"


def trec_eval_lines(run: Run, options: ScoreOptions | None = None) -> list[str]:
    """trec_eval's `-q` output: per-query lines, then `all` with trec_eval's averaging.

    Like trec_eval without -c, the queries are those of the run that have judgments (qrels),
    in qid byte order; undefined values print as 0; counts are summed in `all`.
    """
    options = options or ScoreOptions()
    with cache.caches().lock:
        live, _ = live_state(run, options)
        grades = live.grades.grades
        keep = (
            np.array([bool(grades.get(int(q))) for q in live.queries.ids], dtype=bool)
            & ~live.missing
        )
        cutoffs = tuple(sorted({*live.cutoffs}))
        arrays = {name: values[keep].copy() for name, values in live.arrays.items()}
        qids = [q for q, kept in zip(live.queries.qids, keep.tolist(), strict=True) if kept]
    measures = trec_measures(options.k)
    evaluation = _evaluation(arrays, cutoffs)
    lines = []
    for i, qid in enumerate(qids):
        for measure in measures:
            lines.append(_trec_format(measure, qid, evaluation.trec_value(measure, i)))
    lines.append(f"{'runid':<22}\tall\t{run.name}")
    lines.append(_trec_format("num_q", "all", float(len(qids))))
    for measure in measures:
        lines.append(_trec_format(measure, "all", trec_all(evaluation, measure)))
    return lines
