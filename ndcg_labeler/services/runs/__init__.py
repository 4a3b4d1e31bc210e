"""Retriever runs: the one upload use case (browser, CLI, API), listing and deletion."""

from .catalog import (
    delete_run,
    get_run,
    get_run_by_ref,
    list_runs,
    require_run,
    uploaders,
)
from .fusion import (
    MAX_RRF_K,
    check_fusion,
    describe,
    fuse_runs,
    ranked_lists,
)
from .upload import (
    EXAMPLES,
    MAX_DEPTH,
    MAX_NAME,
    MAX_NOTES,
    clean_name,
    name_from_file,
    name_taken,
    upload_run,
)

__all__ = [
    "EXAMPLES",
    "MAX_DEPTH",
    "MAX_NAME",
    "MAX_NOTES",
    "MAX_RRF_K",
    "check_fusion",
    "clean_name",
    "delete_run",
    "describe",
    "fuse_runs",
    "get_run",
    "get_run_by_ref",
    "list_runs",
    "name_from_file",
    "name_taken",
    "ranked_lists",
    "require_run",
    "upload_run",
    "uploaders",
]
