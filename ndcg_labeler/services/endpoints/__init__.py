"""Live retriever endpoints: ask a search service for every query and store what it returns."""

from .catalog import add_endpoint, list_endpoints, require_endpoint, snapshot
from .fetch import FetchFailed, fetch_run, try_query

__all__ = [
    "FetchFailed",
    "add_endpoint",
    "fetch_run",
    "list_endpoints",
    "require_endpoint",
    "snapshot",
    "try_query",
]
