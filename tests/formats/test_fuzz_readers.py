"""Every reader either parses an input or refuses it with FormatError (a file:line message):
never another exception, whatever the bytes (Hypothesis; bench/fuzz_parsers.py runs longer)."""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings

from ndcg_labeler.formats import FormatError
from ndcg_labeler.formats.corpus import read_corpus
from ndcg_labeler.formats.pairs import read_pairs
from ndcg_labeler.formats.qrels import read_qrels
from ndcg_labeler.formats.queries import read_queries
from ndcg_labeler.formats.runs import read_run
from tests.formats.fuzz_inputs import FUZZ_INPUT

READERS = (read_run, read_queries, read_corpus, read_pairs, read_qrels)


def read_all(data: bytes) -> int:
    """Feed the bytes to every reader (runs through both parsers); returns how many refused."""
    refused = 0
    calls = [(read_run, {"fast": True}), (read_run, {"fast": False})]
    calls += [(reader, {}) for reader in READERS[1:]]
    for reader, options in calls:
        try:
            found = reader(io.BytesIO(data), "fuzz.txt", max_bytes=1 << 20, **options)
            if hasattr(found, "__next__"):
                for _ in found:
                    pass
        except FormatError as exc:
            assert str(exc).startswith("fuzz.txt"), exc
            refused += 1
    return refused


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FUZZ_INPUT)
def test_readers_parse_or_refuse_with_a_located_message(data: bytes) -> None:
    read_all(data)
