"""Live retriever endpoints: ask a search service for every query and store what it returns."""

from .catalog import (
    MAX_NAME,
    METHODS,
    add_endpoint,
    list_endpoints,
    mapping_of,
    parse_header,
    require_endpoint,
    snapshot,
)
from .fetch import DEFAULT_K, FetchFailed, FetchReport, fetch_run, try_query

__all__ = [
    "DEFAULT_K",
    "MAX_NAME",
    "METHODS",
    "FetchFailed",
    "FetchReport",
    "add_endpoint",
    "fetch_run",
    "list_endpoints",
    "mapping_of",
    "parse_header",
    "require_endpoint",
    "snapshot",
    "try_query",
]
