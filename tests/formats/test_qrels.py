"""Qrels: TREC and BEIR formats, integer grades, conflicting duplicates."""

from collections import Counter

import pytest

from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.formats.qrels import read_qrels
from ndcg_labeler.formats.records import QrelRecord as Q

from .util import CONFORMANCE, upload


def read(text, **kw):
    return list(read_qrels(upload(text, **kw), "qrels"))


def error(text):
    with pytest.raises(FormatError) as info:
        read(text)
    return str(info.value)


@pytest.mark.parametrize("variant", [{}, {"gz": True}, {"bom": True, "crlf": True}])
def test_trec_qrels(variant):
    text = "301 0 d1 2\n301\t0\td2\t-1\n\n302 0  d1   0\n"
    assert read(text, **variant) == [Q("301", "d1", 2), Q("301", "d2", -1), Q("302", "d1", 0)]


def test_beir_qrels_with_header():
    text = "query-id\tcorpus-id\tscore\nq1\tdoc1\t1\nq1\tdoc2\t0\n"
    assert read(text) == [Q("q1", "doc1", 1), Q("q1", "doc2", 0)]


def test_identical_duplicate_is_ignored():
    assert read("1 0 d 1\n1 0 d 1\n") == [Q("1", "d", 1)]


def test_conformance_qrels():
    graded = list(read_qrels(CONFORMANCE / "qrels.rel_level"))
    grades = Counter(r.grade for r in graded)
    assert grades == {-1: 304, 0: 2818, 1: 462, 2: 14, 3: 77, 4: 6}
    comment = list(read_qrels(CONFORMANCE / "qrels.comment.test"))
    assert len({r.qid for r in comment}) == 31
    assert all("#" in r.docid for r in comment)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 0 d1 1\n1 0 d2\n", "qrels:2: expected 4 columns (qid iter docid grade), found 3"),
        ("1 0 d1 x\n", "qrels:1: grade 'x' is not an integer"),
        (
            "# judged by A\n1 0 d1 1\n",
            "qrels:1: grade 'A' is not an integer; trec_eval v10 has no comment lines: '#' is data",
        ),
        (
            "# judged\n1 0 d1 1\n",
            "qrels:1: expected 4 columns (qid iter docid grade), found 2; "
            "trec_eval v10 has no comment lines: '#' is data",
        ),
        ("1 0 d1 1.5\n", "qrels:1: grade '1.5' is not an integer"),
        (
            "1 0 d7 1\n2 0 d7 2\n1 0 d7 3\n",
            "qrels:3: docid 'd7' is judged twice for query 1 with different grades "
            "(1 at line 1, 3 here)",
        ),
        ("query-id\tcorpus-id\tscore\nq\td\n", "qrels:2: expected 3 columns"),
        ("query-id\tcorpus-id\tscore\nq\t\t1\n", "qrels:2: empty corpus-id"),
        ("query-id\tcorpus-id\tscore\nq\td\t0.5\n", "qrels:2: grade '0.5' is not an integer"),
        ("", "qrels: file is empty"),
        ("1 0 d1\n", "qrels: cannot tell the format"),
    ],
)
def test_errors(text, message):
    assert error(text).startswith(message)


def test_numbered_variant_gives_first_lines():
    from ndcg_labeler.formats.qrels import read_qrels_numbered

    rows = list(read_qrels_numbered(upload("1 0 a 1\n\n1 0 a 1\n2 0 b 0\n"), "q"))
    assert rows == [(1, Q("1", "a", 1)), (4, Q("2", "b", 0))]
