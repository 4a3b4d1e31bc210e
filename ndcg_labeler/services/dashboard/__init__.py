"""Dashboards: overview, query table, drill-down, comparison, pooling and exports."""

from .bands import (
    BAND_FILTERS,
    MIN_INTERVAL_QUERIES,
    MIN_JUDGED,
    MIN_QUERIES,
    NOT_ENOUGH,
    band,
    mean_band,
)
from .comparison import UNDEFINED_POLICY, Comparison, compare_runs
from .drilldown import DrillDown, drill_down, get_query, grade_chunk
from .exports import compare_csv, compare_json, drill_down_csv, overview_csv, run_csv
from .overview import (
    Overview,
    QueryTable,
    means_over_k,
    overview,
    parse_table_query,
    query_table,
    version_token,
    versions,
)
from .pooling import MAX_DEPTH, add_pool, check_depth, plan_pool

__all__ = [
    "BAND_FILTERS",
    "MAX_DEPTH",
    "MIN_INTERVAL_QUERIES",
    "MIN_JUDGED",
    "MIN_QUERIES",
    "NOT_ENOUGH",
    "UNDEFINED_POLICY",
    "Comparison",
    "DrillDown",
    "Overview",
    "QueryTable",
    "add_pool",
    "band",
    "check_depth",
    "compare_csv",
    "compare_json",
    "compare_runs",
    "drill_down",
    "drill_down_csv",
    "get_query",
    "grade_chunk",
    "mean_band",
    "means_over_k",
    "overview",
    "overview_csv",
    "parse_table_query",
    "plan_pool",
    "query_table",
    "run_csv",
    "version_token",
    "versions",
]
