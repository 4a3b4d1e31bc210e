"""Queries: BEIR JSONL, TREC topics TSV, CSV; detection and line-numbered errors."""

import pytest

from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.formats.queries import read_queries
from ndcg_labeler.formats.records import QueryRecord

from .util import upload

JSONL = (
    '{"_id": "301", "text": "international organized crime", "metadata": {"lang": "en"}}\n'
    '{"_id": 302, "text": " poliomyelitis ", "narrative": "Relevant: outbreaks."}\n'
)


def read(text, name="q", **kw):
    return list(read_queries(upload(text) if isinstance(text, str) else text, name, **kw))


def error(text, **kw):
    with pytest.raises(FormatError) as info:
        read(text, **kw)
    return str(info.value)


def test_beir_jsonl():
    assert read(JSONL) == [
        QueryRecord("301", "international organized crime", None),
        QueryRecord("302", "poliomyelitis", "Relevant: outbreaks."),
    ]


@pytest.mark.parametrize("variant", [{"gz": True}, {"bom": True}, {"crlf": True}])
def test_jsonl_variants(variant):
    assert len(list(read_queries(upload(JSONL, **variant), "q"))) == 2


def test_trec_topics_tsv():
    text = "301\tinternational organized crime\n\n302\tpolio\tabout outbreaks\n"
    assert read(text) == [
        QueryRecord("301", "international organized crime", None),
        QueryRecord("302", "polio", "about outbreaks"),
    ]


def test_tsv_header_line_is_skipped():
    assert read("qid\ttext\n1\tone\n") == [QueryRecord("1", "one", None)]


def test_csv_with_quotes_commas_and_newlines():
    text = 'qid,text,narrative\n1,"crime, organized","line one\nline two"\n2,polio,\n'
    assert read(text) == [
        QueryRecord("1", "crime, organized", "line one\nline two"),
        QueryRecord("2", "polio", None),
    ]


def test_csv_crlf_and_bom():
    stream = upload('qid,text\n1,"a\nb"\n2,c\n', crlf=True, bom=True)
    assert read(stream) == [QueryRecord("1", "a\r\nb", None), QueryRecord("2", "c", None)]


def test_csv_line_numbers_after_multiline_field():
    text = 'qid,text\n1,"a\nb\nc"\n1,again\n'
    assert error(text) == "q:5: qid '1' appears twice (first at line 2)"


def test_fmt_override():
    # Looks like TSV but the caller says it is CSV with a header.
    assert read("qid,text\n1,a\tb\n", fmt="csv") == [QueryRecord("1", "a\tb", None)]
    with pytest.raises(ValueError, match="fmt must be one of"):
        read("x", fmt="xml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            JSONL + '{"_id": "301", "text": "again"}\n',
            "q:3: qid '301' appears twice (first at line 1)",
        ),
        ('{"_id": "1", "text": "  "}\n', "q:1: query 1 has empty text"),
        ('{"_id": "1"}\n', 'q:1: missing key "text"'),
        ('{"text": "x"}\n', 'q:1: missing key "_id" or "qid"'),
        ('{"_id": "", "text": "x"}\n', "q:1: empty id"),
        ('{"_id": true, "text": "x"}\n', 'q:1: "_id" must be a string, not bool'),
        ('{"_id": "1", "text": 5}\n', 'q:1: "text" must be a string, not int'),
        ('{"_id": "1", "text": "x"}\n{"_id": "2", "text": "y"\n', "q:2: invalid JSON: "),
        ('{"_id": "1", "text": "x"}\n["a"]\n', "q:2: expected a JSON object {...} on each line"),
        ("1\tone\n2\n", "q:2: expected 2 columns (qid<TAB>text[<TAB>narrative]), found 1"),
        ("1\tone\n2\t\n", "q:2: query 2 has empty text"),
        ("1\tone\n\tx\n", "q:2: empty qid"),
        ("qid,text\n1,a,b\n", "q:2: expected 2 fields as in the header, found 3"),
        ("qid,text,extra\n1,a,b\n", "q:1: unknown column 'extra' in header"),
        ('qid,text\n1,"unclosed\n', "q:2: bad CSV: unexpected end of data"),
        (
            'qid,text\n1,"a\nb"c\n',
            "q:3: bad CSV: ',' expected after '\"' (record starts at line 2)",
        ),
        ("", "q: file is empty"),
        ("just some words\n", "q: cannot tell the format"),
    ],
)
def test_errors(text, message):
    assert error(text).startswith(message)


def test_id_with_space_is_rejected():
    assert error("qid,text\na b,x\n") == "q:2: qid 'a b' contains whitespace"


def test_numbered_variant_gives_first_lines():
    from ndcg_labeler.formats.queries import read_queries_numbered

    rows = list(read_queries_numbered(upload('qid,text\n1,"a\nb"\n2,c\n'), "q"))
    assert rows == [(2, QueryRecord("1", "a\nb")), (4, QueryRecord("2", "c"))]
