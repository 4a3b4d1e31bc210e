"""Corpus: BEIR corpus.jsonl and CSV/TSV with header; metadata; errors."""

import pytest

from ndcg_labeler.formats.corpus import read_corpus
from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.formats.records import ChunkRecord

from .util import upload


def read(text, **kw):
    stream = upload(text, **{k: kw.pop(k) for k in ("gz", "bom", "crlf") if k in kw})
    return list(read_corpus(stream, "c", **kw))


def error(text, **kw):
    with pytest.raises(FormatError) as info:
        read(text, **kw)
    return str(info.value)


JSONL = (
    '{"_id": "d1", "title": "Polio", "text": "Polio is ...", "metadata": {"url": "u1"}}\n'
    '{"_id": "d2", "title": "", "text": "Body", "source": "wiki"}\n'
)


@pytest.mark.parametrize("variant", [{}, {"gz": True}, {"bom": True, "crlf": True}])
def test_beir_jsonl(variant):
    assert read(JSONL, **variant) == [
        ChunkRecord("d1", "Polio", "Polio is ...", {"url": "u1"}),
        ChunkRecord("d2", None, "Body", {"source": "wiki"}),
    ]


def test_csv_extra_columns_become_metadata():
    text = 'docid,title,text,url\nd1,T,"a, b\nc",http://x\nd2,,plain,\n'
    assert read(text) == [
        ChunkRecord("d1", "T", "a, b\nc", {"url": "http://x"}),
        ChunkRecord("d2", None, "plain", {"url": ""}),
    ]


def test_tsv_with_header():
    assert read("docid\ttext\nd1\thello\n") == [ChunkRecord("d1", None, "hello", {})]


def test_tsv_quotes_as_pandas_writes_them():
    """A quoted field with doubled quotes inside, as pandas' to_csv(sep="\\t") writes it."""
    text = 'docid\ttext\nd1\t"""Hi"" she said"\nd2\tsays ""no"" here\n'
    assert read(text) == [
        ChunkRecord("d1", None, '"Hi" she said', {}),
        ChunkRecord("d2", None, 'says ""no"" here', {}),
    ]


def test_title_only_chunk_is_allowed():
    assert read('{"_id": "d1", "title": "Only a title", "text": ""}\n')[0].title == "Only a title"


@pytest.mark.parametrize("text", ['"text": null, ', ""])
def test_title_only_chunk_may_lack_its_text_key(text):
    """The docs' rule is "a chunk needs a text or a title": a null or absent text is none."""
    line = '{"_id": "d1", ' + text + '"title": "Only a title"}\n'
    assert read(line) == [ChunkRecord("d1", "Only a title", "", {})]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (JSONL + '{"_id": "d1", "text": "x"}\n', "c:3: docid 'd1' appears twice (first at line 1)"),
        ('{"_id": "d1", "text": " "}\n', "c:1: chunk d1 has neither text nor title"),
        ('{"_id": "d1"}\n', "c:1: chunk d1 has neither text nor title"),
        (
            '{"_id": "d1", "text": "x", "metadata": [1]}\n',
            'c:1: "metadata" must be an object, not list',
        ),
        ('{"_id": "d1", "text": "x\\u0000"}\n', 'c:1: "text" contains a NUL character'),
        ("docid,body\nd1,x\n", "c:1: header lacks column 'text' (expected docid, text, [title])"),
        ("docid,text\nd1,x\nd2\n", "c:3: expected 2 fields as in the header, found 1"),
        ("docid,text\n,x\n", "c:2: empty docid"),
        ("", "c: file is empty"),
        (
            'docid\ttext\nd1\t"Hi" she said\n',
            "c:2: bad CSV: '<TAB>' expected after '\"'; TSV is read with CSV quoting: a "
            "field that starts with a double quote must end with one, and a quote inside it "
            'is doubled ("")',
        ),
    ],
)
def test_errors(text, message):
    assert error(text) == message


def test_numbered_variant_gives_first_lines():
    from ndcg_labeler.formats.corpus import read_corpus_numbered

    rows = list(read_corpus_numbered(upload('\n{"_id": "d", "text": "t"}\n'), "c"))
    assert rows == [(2, ChunkRecord("d", None, "t", {}))]


PICK = (
    '{"_id": "a", "text": "alpha"}\n'
    '{"title": "T", "text": "quotes \\"_id\\": \\"c\\" in text", "_id": "b"}\n'
    "\n"
    '{"_id": "c\\u00e9", "text": "escaped id", "metadata": {"_id": "a"}}\n'
    '{"docid": 42, "text": "integer id"}\n'
    '{"_id" :"d\\\\e", "text": "backslash"}\n'
)


@pytest.mark.parametrize("variant", [{}, {"gz": True, "bom": True, "crlf": True}])
def test_pick_reads_the_wanted_lines_only(variant):
    from ndcg_labeler.formats import pick_corpus, read_corpus_numbered

    every = {r.docid: (n, r) for n, r in read_corpus_numbered(upload(PICK, **variant), "c")}
    assert sorted(every) == ["42", "a", "b", "cé", "d\\e"]
    for wanted in (set(every), {"a"}, {"b", "cé"}, {"42", "d\\e", "zz"}, {"c"}, set()):
        picked = list(pick_corpus(upload(PICK, **variant), "c", wanted))
        # The same records on the same lines as the full parser, in file order.
        assert picked == sorted(v for d, v in every.items() if d in wanted)


def test_pick_from_csv():
    from ndcg_labeler.formats import pick_corpus

    text = 'docid,text\nd1,one\nd2,"two\nlines"\nd3,three\n'
    picked = list(pick_corpus(upload(text), "c.csv", {"d2", "d3"}))
    assert picked == [
        (3, ChunkRecord("d2", None, "two\nlines", {})),
        (5, ChunkRecord("d3", None, "three", {})),
    ]
