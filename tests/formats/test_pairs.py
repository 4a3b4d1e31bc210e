"""Pools: pairs from TREC runs and qid,docid files; duplicates merge silently."""

import pytest

from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.formats.pairs import read_pairs
from ndcg_labeler.formats.records import PairRecord as P

from .util import CONFORMANCE, upload


def read(text, **kw):
    return list(read_pairs(upload(text, **kw), "p"))


def error(text):
    with pytest.raises(FormatError) as info:
        read(text)
    return str(info.value)


def test_trec_run_pairs_are_deduplicated_in_first_seen_order():
    text = "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n2 Q0 d1 1 5 t\n1 Q0 d1 3 0.5 t\n"
    assert read(text) == [P("1", "d1"), P("1", "d2"), P("2", "d1")]


@pytest.mark.parametrize("variant", [{"gz": True}, {"bom": True, "crlf": True}])
def test_csv_with_header(variant):
    assert read("qid,docid,score\n1,d1,3\n1,d1,3\n2,d9,1\n", **variant) == [
        P("1", "d1"),
        P("2", "d9"),
    ]


def test_tsv_without_header():
    assert read("1\td1\n2\td2\n") == [P("1", "d1"), P("2", "d2")]


def test_csv_without_header():
    assert read("1,d1\n") == [P("1", "d1")]


def test_conformance_run_as_pool():
    pairs = list(read_pairs(CONFORMANCE / "results.test"))
    assert len(pairs) == 1500


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "1 Q0 d1 1 2.0 t\n1 Q0 d2 2\n",
            "p:2: expected 6 columns (qid Q0 docid rank score tag), found 4",
        ),
        ("1\td1\n2\td2\tx\n", "p:2: expected 2 columns (qid<TAB>docid), found 3"),
        ("qid,docid\n1,\n", "p:2: empty docid"),
        ("qid,docid\n1,a\n2\n", "p:3: expected 2 fields as in the header, found 1"),
        ("", "p: file is empty"),
        ("lonely\n", "p: cannot tell the format"),
    ],
)
def test_errors(text, message):
    assert error(text).startswith(message)


def test_numbered_variant_gives_first_lines():
    from ndcg_labeler.formats.pairs import read_pairs_numbered

    rows = list(read_pairs_numbered(upload('qid,docid\n1,a\n1,a\n2,"b"\n'), "p"))
    assert rows == [(2, P("1", "a")), (4, P("2", "b"))]
