"""Any named measure of a run, per query: `nDCG@10`, `P(rel=2)@5`, `bpref`, `ndcg_cut_10` ...

`parse_measures` reads the names (one parser, scoring.parse_measure, with the service's error). The
measures the live store keeps (nDCG, P, R, AP, RR, Judged and the counts, at any cutoff and
rel level: the cutoff becomes the options' k and rel their threshold) are read from it, so they
are the numbers every page shows and stay current as grades come in; the others (Rprec, bpref,
infAP, Success@k, AP@k, RR@k) are computed on demand from the run's ranked lists and the grades.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ndcg_labeler import scoring
from ndcg_labeler.models import Run
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services.live.engine import (
    grades_by_query,
    live_state,
    scoring_lock,
)
from ndcg_labeler.services.live.entries import load_run_data
from ndcg_labeler.services.live.options import ScoreOptions, check_kept_depth


@dataclass(frozen=True)
class MeasureValues:
    """One measure of one run per test-set query (qid order); NaN where undefined."""

    measure: scoring.Measure
    qids: list[str]
    values: np.ndarray
    missing: np.ndarray

    @property
    def mean(self) -> float | None:
        """Mean over the queries with a defined value (None when there are none)."""
        defined = self.values[~np.isnan(self.values)]
        return float(defined.mean()) if defined.size else None

    def by_qid(self) -> dict[str, float | None]:
        """{qid: value}, None where undefined."""
        return {
            q: (None if v != v else v) for q, v in zip(self.qids, self.values.tolist(), strict=True)
        }

    @staticmethod
    def into_json(out: dict[str, Any], found: list[MeasureValues]) -> dict[str, Any]:
        """`out` (a scores JSON) with the measures asked for: their summary under "measures" and
        each query's values under its "measures" (nothing added when none was asked for)."""
        if not found:
            return out
        out["measures"] = [
            {
                "measure": m.measure.shown,
                "canonical": m.measure.canonical,
                "trec_eval": m.measure.trec_name,
                "mean": m.mean,
                "queries_defined": int(np.count_nonzero(~np.isnan(m.values))),
            }
            for m in found
        ]
        values = [m.by_qid() for m in found]
        for query in out["queries"]:
            query["measures"] = {
                m.measure.shown: v.get(query["qid"]) for m, v in zip(found, values, strict=True)
            }
        return out


def parse_measures(
    names: Iterable[str], default: Iterable[str] = ("nDCG@10",)
) -> list[scoring.Measure]:
    """The measures named (either syntax, comma-separated or repeated), or a ServiceError."""
    try:
        return scoring.parse_measures(names, default)
    except scoring.MeasureNameError as exc:
        raise ServiceError(str(exc)) from None


# (policy, label source) -> each query's ranked grades and judged grades, for one run.
Loaded = dict[tuple[str, str], tuple[list[np.ndarray], list[np.ndarray]]]


def measure_values(
    run: Run, measure: scoring.Measure, options: ScoreOptions, loaded: Loaded | None = None
) -> MeasureValues:
    """The measure of every test-set query of the run under `options` (labels, gain, policy).

    `loaded` keeps the run's ranked lists joined with the grades between calls for the same
    run, so that several measures computed on demand read the run's entries once.
    """
    check_kept_measure(run, measure)
    chosen = replace(
        options,
        k=measure.cutoff or options.k,
        threshold=measure.rel if measure.rel is not None else options.threshold,
    ).checked()
    name = scoring.evaluation_name(measure)
    with scoring_lock():
        current, _state, resolved, queries = live_state(run, chosen)
        missing = current.missing.copy()
        if name is not None:
            values = current.arrays[name].astype(np.float64)
            if measure.family == "nDCG":
                # As run_scores does: a query the run misses scores 0 where it has gain.
                values = np.where(missing & current.has_gain & np.isnan(values), 0.0, values)
            return MeasureValues(measure, list(queries.qids), values, missing)
    loaded = {} if loaded is None else loaded
    key = (resolved.policy, resolved.labels)
    if key not in loaded:
        by_query = grades_by_query(run.test_set, resolved.policy, resolved.labels)
        ranked = load_run_data(run).in_query_order(queries.ids, by_query)
        off = ranked.offsets.tolist()
        loaded[key] = (
            [ranked.grades[off[i] : off[i + 1]] for i in range(len(off) - 1)],
            [np.fromiter(by_query.get(int(q), {}).values(), dtype=np.float64) for q in queries.ids],
        )
    lists, judged = loaded[key]
    values = scoring.measure_values(measure, lists, judged, resolved.scoring)
    return MeasureValues(measure, list(queries.qids), values, missing)


def check_kept_measure(run: Run, measure: scoring.Measure) -> None:
    """Refuse a measure an archived run can no longer give, saying what it still can.

    Its stored figures at deeper cutoffs and over the whole list are from before archiving and
    would go stale with the next grade (re-scoring reads only the kept entries), so a gate or
    an export must not read them. NumRel counts the judged chunks alone: it stays.
    """
    if run.kept_depth is None or measure.family == "NumRel":
        return
    if measure.cutoff is None:
        raise ServiceError(
            f"run '{run.name}' is archived: it kept its top {run.kept_depth} entries per query, "
            f"so {measure.shown}, which needs the whole list, is no longer available; "
            f"measures cut at k up to {run.kept_depth} still are"
        )
    check_kept_depth(run, measure.cutoff)


def named_measures(
    run: Run, names: Iterable[str | scoring.Measure], options: ScoreOptions
) -> list[MeasureValues]:
    """Every measure given parsed, then every one named (none: an empty list), of the run under
    `options`; names in either syntax, comma-separated or repeated (a bad one: ServiceError)."""
    names = list(names)
    if not names:
        return []
    given = [n for n in names if isinstance(n, scoring.Measure)]
    text = [n for n in names if isinstance(n, str)]
    chosen = given + (parse_measures(text) if text else [])
    loaded: Loaded = {}
    return [measure_values(run, m, options, loaded) for m in chosen]
