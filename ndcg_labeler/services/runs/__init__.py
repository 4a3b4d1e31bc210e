"""Retriever runs: the one upload use case (browser, CLI, API), lists, tags, retention, deletion."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndcg_labeler import lazy

if TYPE_CHECKING:  # every name loads its module on first use (ndcg_labeler.lazy)
    from .bm25 import Settings as Bm25Settings
    from .bm25 import corpus_size, create_bm25_run
    from .catalog import delete_run, get_run, list_runs, require_run, uploaders
    from .corpus_check import run_docids
    from .fusion import check_fusion, fuse_runs, ranked_lists
    from .listing import SORTS, RunFilter, find_runs, mark_run, test_set_tags
    from .retention import archive_run
    from .upload import (
        MAX_DEPTH,
        MAX_NAME,
        MAX_NOTES,
        clean_name,
        clean_series,
        name_taken,
        upload_run,
    )

__all__ = [
    "MAX_DEPTH",
    "MAX_NAME",
    "MAX_NOTES",
    "SORTS",
    "Bm25Settings",
    "RunFilter",
    "archive_run",
    "check_fusion",
    "clean_name",
    "clean_series",
    "corpus_size",
    "create_bm25_run",
    "delete_run",
    "find_runs",
    "fuse_runs",
    "get_run",
    "list_runs",
    "mark_run",
    "name_taken",
    "ranked_lists",
    "require_run",
    "run_docids",
    "test_set_tags",
    "upload_run",
    "uploaders",
]

__getattr__ = lazy.front_door(__name__, __file__)
