"""Live retriever endpoints: ask a search service for every query and store what it returns."""

from .catalog import MAX_NAME, add_endpoint, list_endpoints, require_endpoint, snapshot
from .editing import SETTINGS, busy_jobs, delete_endpoint, edit_endpoint, settings_of
from .fetch import DEFAULT_K, FetchFailed, fetch_run, try_limit, try_query
from .limits import (
    DEFAULT_CONCURRENCY,
    DEFAULT_RPM,
    DEFAULT_TIMEOUT,
    MAX_CONCURRENCY,
    MAX_TIMEOUT,
    limit_errors,
    read_limits,
)

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_K",
    "DEFAULT_RPM",
    "DEFAULT_TIMEOUT",
    "MAX_CONCURRENCY",
    "MAX_NAME",
    "MAX_TIMEOUT",
    "SETTINGS",
    "FetchFailed",
    "add_endpoint",
    "busy_jobs",
    "delete_endpoint",
    "edit_endpoint",
    "fetch_run",
    "limit_errors",
    "list_endpoints",
    "read_limits",
    "require_endpoint",
    "settings_of",
    "snapshot",
    "try_limit",
    "try_query",
]
