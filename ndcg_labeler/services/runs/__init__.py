"""Retriever runs: the one upload use case (browser, CLI, API), listing and deletion."""

from .upload import (
    EXAMPLES,
    MAX_DEPTH,
    MAX_NAME,
    MAX_NOTES,
    clean_name,
    delete_run,
    get_run,
    list_runs,
    name_taken,
    require_run,
    upload_run,
    uploaders,
)

__all__ = [
    "EXAMPLES",
    "MAX_DEPTH",
    "MAX_NAME",
    "MAX_NOTES",
    "clean_name",
    "delete_run",
    "get_run",
    "list_runs",
    "name_taken",
    "require_run",
    "upload_run",
    "uploaders",
]
