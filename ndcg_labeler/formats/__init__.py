"""Pure parsers and writers for test-set and run files; no Flask, no database, no globals.

The names below load their module on first use (ndcg_labeler.lazy): the run parser pulls in
numpy and pyarrow, which start-up (`flask --help`, every CLI command) should not pay for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndcg_labeler import lazy

if TYPE_CHECKING:  # every name loads its module on first use (ndcg_labeler.lazy)
    from .corpus import pick_corpus, read_corpus, read_corpus_numbered
    from .errors import FormatError
    from .fields import natural_key
    from .hits import PRESETS, Hit, HitsError, Mapping, check_mapping, map_hits, preset
    from .llm_answer import parse_answer_grade, unparsed_reason
    from .opensearch import (
        read_srw_judgments,
        read_srw_query_set,
        write_srw_judgments,
        write_srw_query_set,
    )
    from .pairs import detect_pairs_format, read_pairs, read_pairs_numbered
    from .permute import permute_strings, permute_values
    from .qrels import read_qrels, read_qrels_numbered
    from .quepid import (
        SnapshotRow,
        TextJudgment,
        clean_text,
        read_quepid_judgments,
        read_quepid_snapshot,
        write_quepid_judgments,
        write_quepid_snapshot,
    )
    from .queries import read_queries, read_queries_numbered
    from .ratings import RatingMap, RatingMapError
    from .records import ChunkRecord, PairRecord, QrelRecord, QueryRecord
    from .run_dedup import string_hashes
    from .run_storage import decode_docids, decode_ranked, decode_top_docids, encode_ranked
    from .runs import ParsedRun, read_run
    from .score_storage import (
        decode_score_arrays,
        encode_score_arrays,
        is_compact_scores,
        legacy_score_blob,
    )
    from .spreadsheet import safe_cell, safe_value
    from .textio import DEFAULT_MAX_BYTES, Source, first_line, open_source, size_of
    from .writers import write_trec_qrels, write_trec_run

__all__ = [
    "DEFAULT_MAX_BYTES",
    "PRESETS",
    "ChunkRecord",
    "FormatError",
    "Hit",
    "HitsError",
    "Mapping",
    "PairRecord",
    "ParsedRun",
    "QrelRecord",
    "QueryRecord",
    "RatingMap",
    "RatingMapError",
    "SnapshotRow",
    "Source",
    "TextJudgment",
    "check_mapping",
    "clean_text",
    "decode_docids",
    "decode_ranked",
    "decode_score_arrays",
    "decode_top_docids",
    "detect_pairs_format",
    "encode_ranked",
    "encode_score_arrays",
    "first_line",
    "is_compact_scores",
    "legacy_score_blob",
    "map_hits",
    "natural_key",
    "open_source",
    "parse_answer_grade",
    "permute_strings",
    "permute_values",
    "pick_corpus",
    "preset",
    "read_corpus",
    "read_corpus_numbered",
    "read_pairs",
    "read_pairs_numbered",
    "read_qrels",
    "read_qrels_numbered",
    "read_quepid_judgments",
    "read_quepid_snapshot",
    "read_queries",
    "read_queries_numbered",
    "read_run",
    "read_srw_judgments",
    "read_srw_query_set",
    "safe_cell",
    "safe_value",
    "size_of",
    "string_hashes",
    "unparsed_reason",
    "write_quepid_judgments",
    "write_quepid_snapshot",
    "write_srw_judgments",
    "write_srw_query_set",
    "write_trec_qrels",
    "write_trec_run",
]

__getattr__ = lazy.front_door(__name__, __file__)
