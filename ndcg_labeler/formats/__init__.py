"""Pure parsers and writers for test-set and run files; no Flask, no database, no globals."""

from .corpus import read_corpus
from .errors import FormatError
from .pairs import read_pairs
from .qrels import read_qrels
from .queries import read_queries
from .records import ChunkRecord, PairRecord, QrelRecord, QueryRecord
from .runs import ParsedRun, read_run
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
    "read_pairs",
    "read_qrels",
    "read_queries",
    "read_run",
    "write_trec_qrels",
    "write_trec_run",
]
