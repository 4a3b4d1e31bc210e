"""The live scoring engine: scores that always reflect the grades, stored and kept current.

One entry, `score_run(run, options)`; options come from `parse_options` (query strings, CLI
and API alike). Grades by aggregation policy, per-query detail, trec_eval's `-q` lines and the
ranked lists pooling needs (`top_lists`) are read through this package only.
"""

from .ahead import GradesAhead
from .detail import QueryDetail, RankRow, query_detail
from .engine import forget_run, grades_by_query, score_new_run, score_run
from .entries import query_docids, top_lists, uploaded_run_data
from .grades import Qrels, qrels_text, query_grades, scoring_qrels, sorted_records
from .options import (
    K_CHOICES,
    MAX_K,
    STANDARD_CUTOFFS,
    Resolved,
    ScoreOptions,
    k_choices,
    option_args,
    parse_options,
    policies,
    resolve_options,
)
from .ranked import RankedBuffer, RunData
from .results import QueryScore, RunScores
from .trec import trec_eval_lines, trec_measures

__all__ = [
    "K_CHOICES",
    "MAX_K",
    "STANDARD_CUTOFFS",
    "GradesAhead",
    "Qrels",
    "QueryDetail",
    "QueryScore",
    "RankRow",
    "RankedBuffer",
    "Resolved",
    "RunData",
    "RunScores",
    "ScoreOptions",
    "forget_run",
    "grades_by_query",
    "k_choices",
    "option_args",
    "parse_options",
    "policies",
    "qrels_text",
    "query_detail",
    "query_docids",
    "query_grades",
    "resolve_options",
    "score_new_run",
    "score_run",
    "scoring_qrels",
    "sorted_records",
    "top_lists",
    "trec_eval_lines",
    "trec_measures",
    "uploaded_run_data",
]
