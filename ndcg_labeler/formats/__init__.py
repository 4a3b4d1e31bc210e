"""Pure parsers and writers for test-set and run files; no Flask, no database, no globals."""

from .corpus import read_corpus, read_corpus_numbered
from .errors import FormatError
from .pairs import read_pairs, read_pairs_numbered
from .qrels import read_qrels, read_qrels_numbered
from .queries import read_queries, read_queries_numbered
from .records import ChunkRecord, PairRecord, QrelRecord, QueryRecord
from .runs import ParsedRun, read_run
from .spreadsheet import safe_cell
from .textio import DEFAULT_MAX_BYTES, Source
from .writers import write_trec_qrels, write_trec_run

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ChunkRecord",
    "FormatError",
    "PairRecord",
    "ParsedRun",
    "QrelRecord",
    "QueryRecord",
    "Source",
    "read_corpus",
    "read_corpus_numbered",
    "read_pairs",
    "read_pairs_numbered",
    "read_qrels",
    "read_qrels_numbered",
    "read_queries",
    "read_queries_numbered",
    "read_run",
    "safe_cell",
    "write_trec_qrels",
    "write_trec_run",
]
