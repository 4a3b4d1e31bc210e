"""Retriever runs: the one upload use case (browser, CLI, API), listing and deletion."""

from .bm25 import Settings as Bm25Settings
from .bm25 import corpus_size, create_bm25_run
from .catalog import delete_run, get_run, get_run_by_ref, list_runs, require_run, uploaders
from .corpus_check import run_docids
from .fusion import check_fusion, fuse_runs, ranked_lists
from .upload import MAX_DEPTH, MAX_NAME, MAX_NOTES, clean_name, name_taken, upload_run

__all__ = [
    "MAX_DEPTH",
    "MAX_NAME",
    "MAX_NOTES",
    "Bm25Settings",
    "check_fusion",
    "clean_name",
    "corpus_size",
    "create_bm25_run",
    "delete_run",
    "fuse_runs",
    "get_run",
    "get_run_by_ref",
    "list_runs",
    "name_taken",
    "ranked_lists",
    "require_run",
    "run_docids",
    "upload_run",
    "uploaders",
]
