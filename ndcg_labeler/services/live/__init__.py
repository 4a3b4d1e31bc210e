"""The live scoring engine: scores that always reflect the grades, stored and kept current.

One entry, `score_run(run, options)`; options come from `parse_options` (query strings, CLI
and API alike). Grades by aggregation policy, per-query detail, trec_eval's `-q` lines and the
ranked lists pooling needs (`top_lists`) are read through this package only; an upload scores
its new run through `GradesAhead`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndcg_labeler import lazy

if TYPE_CHECKING:  # every name loads its module on first use (ndcg_labeler.lazy)
    from .ahead import GradesAhead
    from .detail import QueryDetail, query_detail
    from .engine import forget_run, grades_by_query, means_over_k, score_run
    from .entries import top_lists
    from .grades import qrels_text, scoring_qrels
    from .measures import MeasureValues, named_measures
    from .options import (
        K_CHOICES,
        Resolved,
        ScoreOptions,
        k_choices,
        option_args,
        parse_options,
        policies,
    )
    from .ranked import RankedBuffer
    from .results import QueryScore, RunScores
    from .summary import ListedScores, listed_scores
    from .trec import trec_eval_lines

__all__ = [
    "K_CHOICES",
    "GradesAhead",
    "ListedScores",
    "MeasureValues",
    "QueryDetail",
    "QueryScore",
    "RankedBuffer",
    "Resolved",
    "RunScores",
    "ScoreOptions",
    "forget_run",
    "grades_by_query",
    "k_choices",
    "listed_scores",
    "means_over_k",
    "named_measures",
    "option_args",
    "parse_options",
    "policies",
    "qrels_text",
    "query_detail",
    "score_run",
    "scoring_qrels",
    "top_lists",
    "trec_eval_lines",
]

__getattr__ = lazy.front_door(__name__, __file__)
