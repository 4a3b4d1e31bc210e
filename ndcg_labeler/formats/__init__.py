"""Pure parsers and writers for test-set and run files; no Flask, no database, no globals.

The names below load their module on first use (PEP 562): the run parser pulls in numpy and
pyarrow, which start-up (`flask --help`, every CLI command) should not pay for.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "pick_corpus": "corpus",
    "read_corpus": "corpus",
    "read_corpus_numbered": "corpus",
    "FormatError": "errors",
    "natural_key": "fields",
    "Hit": "hits",
    "HitsError": "hits",
    "Mapping": "hits",
    "PRESETS": "hits",
    "check_mapping": "hits",
    "map_hits": "hits",
    "preset": "hits",
    "parse_answer_grade": "llm_answer",
    "detect_pairs_format": "pairs",
    "read_pairs": "pairs",
    "read_pairs_numbered": "pairs",
    "permute_strings": "permute",
    "permute_values": "permute",
    "read_qrels": "qrels",
    "read_qrels_numbered": "qrels",
    "read_queries": "queries",
    "read_queries_numbered": "queries",
    "safe_cell": "spreadsheet",
    "safe_value": "spreadsheet",
    "ChunkRecord": "records",
    "PairRecord": "records",
    "QrelRecord": "records",
    "QueryRecord": "records",
    "string_hashes": "run_dedup",
    "decode_docids": "run_storage",
    "decode_ranked": "run_storage",
    "decode_top_docids": "run_storage",
    "encode_ranked": "run_storage",
    "ParsedRun": "runs",
    "read_run": "runs",
    "DEFAULT_MAX_BYTES": "textio",
    "Source": "textio",
    "first_line": "textio",
    "open_source": "textio",
    "size_of": "textio",
    "RatingMap": "ratings",
    "RatingMapError": "ratings",
    "SnapshotRow": "quepid",
    "TextJudgment": "quepid",
    "clean_text": "quepid",
    "read_quepid_judgments": "quepid",
    "read_quepid_snapshot": "quepid",
    "write_quepid_judgments": "quepid",
    "write_quepid_snapshot": "quepid",
    "read_srw_judgments": "opensearch",
    "read_srw_query_set": "opensearch",
    "write_srw_judgments": "opensearch",
    "write_srw_query_set": "opensearch",
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
