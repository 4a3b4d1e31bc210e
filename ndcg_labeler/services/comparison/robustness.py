"""Whether a comparison's winner rests on unjudged chunks: scoring.flip_test on the compared rows.

The definitions are scoring.flip_test's (module scoring/flip.py). Here: the runs' top k and the
grades are read, and today's values are the ones the comparison shows. Two settings read the
top-grade world differently. With `judged_only`, the top-grade world's chunks are judged and so
stay in the list: its values are those of the uncondensed top k (today's stay condensed). With
`ideal=retrieved` a run's ideal comes from its whole retrieved list, which the top k does not
show: each run's own top-grade value (scoring.sensitivity, its unjudged top k only) is used.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

import numpy as np
from sqlalchemy.exc import OperationalError

from ndcg_labeler import scoring
from ndcg_labeler.models import Run
from ndcg_labeler.services import live
from ndcg_labeler.services._figures_cache import Kept, cached, register

# B against A today and in the top-grade world (robust, unjudged_pairs, the deltas, winners).
Robustness = scoring.FlipTest

# Flip tests a process keeps: each reads both runs' top k (every ranked list of the runs), which
# a comparison page polled every second must not repeat while neither runs nor grades moved.
_KEPT: Kept[list[Robustness]] = Kept("ndcg_flip_tests", 32)
_KIND = "compare_flips"
register(scoring.FlipTest)
log = logging.getLogger(__name__)


def pair_robustness(
    runs: Sequence[Run], results: Sequence[live.RunScores], index: np.ndarray
) -> list[Robustness]:
    """Each run against the first (`index`: the compared rows), today and in the top-grade
    world of the two; kept in this process and in the figures cache (kind "compare_flips") until
    the runs, the grades or the setting change (people's grades only: a machine judge's answers
    move no labels version)."""
    if results[0].options.labels != "human":
        return _pair_robustness(runs, results, index)
    key = (
        tuple((run.id, run.sha256, run.num_entries) for run in runs),
        repr(results[0].options),
        results[0].labels_version,
        hashlib.sha256(results[0].query_ids[index].tobytes()).hexdigest(),
    )
    found = _KEPT.get(key)
    if found is None:
        # Stored in the database as well: a freshly started worker (or another server) that
        # shows this comparison again reads the verdict instead of both runs' top k.
        # One row per comparison (runs and options), its version the grades and the compared
        # queries: a grade overwrites the row rather than adding one.
        options = hashlib.sha256(repr(key[:2]).encode()).hexdigest()
        version = hashlib.sha256(repr(key[2:]).encode()).hexdigest()
        computed: list[list[Robustness]] = []

        def compute(_: object) -> list[Robustness]:
            computed.append(_pair_robustness(runs, results, index))
            return computed[0]

        try:
            found = cached(
                runs[0].test_set, _KIND, options, lambda _: version, compute, inline=True
            ).value
        except OperationalError:  # a busy database (SQLite's one writer): not stored this time
            log.info("compare: the flip test was not stored (database busy)")
            found = computed[0] if computed else _pair_robustness(runs, results, index)
        _KEPT.keep(key, found)
    return found


def _pair_robustness(
    runs: Sequence[Run], results: Sequence[live.RunScores], index: np.ndarray
) -> list[Robustness]:
    """pair_robustness, computed."""
    first = results[0]
    o = first.options
    k = o.k
    grades = live.grades_by_query(runs[0].test_set, o.policy, o.labels)
    lists = [live.top_lists(run, k) for run in runs]
    query_ids = [int(q) for q in first.query_ids[index].tolist()]
    out = []
    for n in range(1, len(runs)):
        queries = scoring.flip_arrays(query_ids, lists[0], lists[n], grades, k)
        if_top = None
        if o.ideal == "retrieved":
            if_top = (first.ndcg_if_unjudged_top[index], results[n].ndcg_if_unjudged_top[index])
        today = (first.ndcg[index], results[n].ndcg[index])
        # A compared row has a defined NDCG, so judged gain: flip_test keeps every one of them.
        out.append(scoring.flip_test_flat(queries, k, float(o.top_grade), o.gain, today, if_top))
    return out
