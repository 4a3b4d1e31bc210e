"""Files that are not what the page asks for: binary files and qrels offered as a run."""

from __future__ import annotations

import gzip
import io

import pytest

from ndcg_labeler.formats import FormatError
from ndcg_labeler.formats.corpus import read_corpus
from ndcg_labeler.formats.pairs import read_pairs
from ndcg_labeler.formats.qrels import read_qrels
from ndcg_labeler.formats.queries import read_queries
from ndcg_labeler.formats.runs import read_run

READERS = [read_run, read_pairs, read_qrels, read_queries, read_corpus]


def _read(reader, body: bytes, name: str) -> None:
    """Read the whole file (some readers stream records as they go)."""
    found = reader(io.BytesIO(body), name)
    if hasattr(found, "__next__"):
        list(found)


BINARIES = [
    (b"PK\x03\x04\x14\x00\x06\x00" + b"\x00" * 40, "a ZIP archive (an .xlsx or .docx is one too)"),
    (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", "a PDF document"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a PNG image"),
    (b"SQLite format 3\x00\x10\x00", "an SQLite database"),
    (b"q1 Q0 a 1 1.0 s\nq1\x00\x00\x00\x01", "binary data"),
    ("q1 Q0 a 1 1.0 s\n".encode("utf-16-le"), "binary data"),  # UTF-16 text: half NULs
]


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.__name__)
@pytest.mark.parametrize(("data", "kind"), BINARIES, ids=lambda v: str(v)[:12])
def test_a_binary_file_gets_one_message_from_every_reader(reader, data: bytes, kind: str) -> None:
    expected = f"f.txt: this is {kind}, not a text file; upload UTF-8 text (gzip is fine)"
    for body in (data, gzip.compress(data)):  # also inside gzip
        with pytest.raises(FormatError) as caught:
            _read(reader, body, "f.txt")
        assert str(caught.value) == expected


def test_text_in_another_encoding_is_not_called_binary() -> None:
    with pytest.raises(FormatError, match=r"f.tsv:2: invalid UTF-8 at byte 7"):
        _read(read_queries, "q1\tcafe\nq2\tcaf\xe9\n".encode("latin-1"), "f.tsv")


QRELS_NOT_RUN = (
    "this looks like a qrels file (qid 0 docid grade), not a run (qid Q0 docid rank score tag); "
    "import it as qrels instead"
)


@pytest.mark.parametrize("text", ["q1 0 d1 2\nq1 0 d2 0\n", "q1\t0\td1\t1\n", "301 0 FBIS3 -1\n"])
def test_qrels_uploaded_as_a_run_or_a_pool_say_so(text: str) -> None:
    for reader in (read_run, read_pairs):
        with pytest.raises(FormatError) as caught:
            _read(reader, text.encode(), "labels.txt")
        assert str(caught.value) == f"labels.txt:1: {QRELS_NOT_RUN}"


def test_four_columns_that_are_not_qrels_keep_the_format_message() -> None:
    with pytest.raises(FormatError, match="cannot tell the run format: the first line has 4"):
        _read(read_run, b"q1 Q0 d1 high\n", "r.txt")
