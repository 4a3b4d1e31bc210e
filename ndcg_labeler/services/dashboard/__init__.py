"""Dashboards: the overview, the query table, a query's drill-down, bands and CSV exports."""

from .bands import (
    BAND_FILTERS,
    MIN_INTERVAL_QUERIES,
    MIN_JUDGED,
    MIN_QUERIES,
    NOT_ENOUGH,
    band,
    mean_band,
)
from .drilldown import DrillDown, drill_down, get_query, grade_chunk
from .exports import drill_down_csv, overview_csv, run_csv, to_csv
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

__all__ = [
    "BAND_FILTERS",
    "MIN_INTERVAL_QUERIES",
    "MIN_JUDGED",
    "MIN_QUERIES",
    "NOT_ENOUGH",
    "DrillDown",
    "Overview",
    "QueryTable",
    "band",
    "drill_down",
    "drill_down_csv",
    "get_query",
    "grade_chunk",
    "mean_band",
    "means_over_k",
    "overview",
    "overview_csv",
    "parse_table_query",
    "query_table",
    "run_csv",
    "to_csv",
    "version_token",
    "versions",
]
