"""Pure parsers and writers for test-set and run files; no Flask, no database, no globals.

The names below load their module on first use (PEP 562): the run parser pulls in numpy and
pyarrow, which start-up (`flask --help`, every CLI command) should not pay for.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "read_corpus": "corpus",
    "read_corpus_numbered": "corpus",
    "FormatError": "errors",
    "read_pairs": "pairs",
    "read_pairs_numbered": "pairs",
    "read_qrels": "qrels",
    "read_qrels_numbered": "qrels",
    "read_queries": "queries",
    "read_queries_numbered": "queries",
    "safe_cell": "spreadsheet",
    "ChunkRecord": "records",
    "PairRecord": "records",
    "QrelRecord": "records",
    "QueryRecord": "records",
    "ParsedRun": "runs",
    "read_run": "runs",
    "DEFAULT_MAX_BYTES": "textio",
    "Source": "textio",
    "write_trec_qrels": "writers",
    "write_trec_run": "writers",
}

__all__ = sorted(_WHERE, key=str.lower)


def __getattr__(name: str) -> Any:
    """Import the module that defines `name` when it is first asked for."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
