"""Live retriever endpoints: ask a search service for every query and store what it returns."""

from .catalog import MAX_NAME, add_endpoint, list_endpoints, require_endpoint, snapshot
from .fetch import DEFAULT_K, FetchFailed, fetch_run, try_query

__all__ = [
    "DEFAULT_K",
    "MAX_NAME",
    "FetchFailed",
    "add_endpoint",
    "fetch_run",
    "list_endpoints",
    "require_endpoint",
    "snapshot",
    "try_query",
]
