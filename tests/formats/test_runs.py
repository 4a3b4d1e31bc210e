"""Runs: every format, detection, errors with file:line, depth cut and the trec_eval test data."""

import json

import numpy as np
import pytest

from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.formats.runs import read_run

from .util import upload

HINT = "; trec_eval v10 has no comment lines: '#' is data"
TREC = "q1 Q0 d1 1 1.5e-3 tag\nq1 Q0 d2 2 -2 tag\nq2 Q0 d1 1 10 tag\nq1 Q0 d3 3 7E2 tag\n"


def as_dict(run):
    """{qid: [(docid, score), ...]} in stored order."""
    return {q: list(zip(d.tolist(), s.tolist(), strict=True)) for q, d, s in run.items()}


def read(text, fast=True, **kw):
    variant = {k: kw.pop(k) for k in ("gz", "bom", "crlf") if k in kw}
    return read_run(upload(text, **variant), "run.txt", fast=fast, **kw)


def error(text, fast=True, **kw):
    with pytest.raises(FormatError) as info:
        read(text, fast=fast, **kw)
    return str(info.value)


EXPECTED = {"q1": [("d1", 0.0015), ("d2", -2.0), ("d3", 700.0)], "q2": [("d1", 10.0)]}


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("variant", [{}, {"gz": True}, {"bom": True}, {"crlf": True}])
def test_trec_run(fast, variant):
    run = read(TREC, fast=fast, **variant)
    assert run.format == "trec"
    assert run.lines == 4
    assert run.qids == ["q1", "q2"]
    assert run.offsets.tolist() == [0, 3, 4]
    assert run.offsets.dtype == np.int64 and run.scores.dtype == np.float64
    assert run.docids.dtype == object
    assert as_dict(run) == EXPECTED
    assert len(run) == 2


@pytest.mark.parametrize("fast", [True, False])
def test_trec_run_irregular_whitespace(fast):
    text = (
        "q1\tQ0\td1\t1\t  1.5e-3\ttag \n  q1  Q0 d2 2 -2 tag\n\n \t\n"
        "q2 Q0 d1 1 10 tag\r\nq1 Q0 d3 3 7E2 tag"
    )
    assert as_dict(read(text, fast=fast)) == EXPECTED


@pytest.mark.parametrize("fast", [True, False])
def test_fields_after_the_tag_are_ignored_like_trec_eval(fast):
    text = TREC.replace("q2 Q0 d1 1 10 tag", "q2 Q0 d1 1 10 tag reserved for future")
    assert as_dict(read(text, fast=fast)) == EXPECTED


@pytest.mark.parametrize("fast", [True, False])
def test_tab_separated_trec_run(fast):
    assert as_dict(read(TREC.replace(" ", "\t"), fast=fast)) == EXPECTED


def test_msmarco_run():
    run = read("q1\td1\t1\nq1\td2\t2\nq2\td1\t1\n")
    assert run.format == "msmarco"
    assert as_dict(run) == {"q1": [("d1", -1.0), ("d2", -2.0)], "q2": [("d1", -1.0)]}


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("qid,docid,score\nq1,d1,0.0015\nq1,d2,-2\nq2,d1,10\nq1,d3,700\n", "csv-score"),
        (
            "qid\tdocid\tscore\tx\nq1\td1\t0.0015\t\nq1\td2\t-2\t\nq2\td1\t10\t\nq1\td3\t7e2\t\n",
            "tsv-score",
        ),
        ("QID, DocID, Rank\nq1,d3,1\nq1,d1,2\nq1,d2,3\nq2,d1,1\n", "csv-rank"),
        ("qid\tdocid\trank\nq1\td3\t1\n", "tsv-rank"),
    ],
)
def test_delimited_runs(text, fmt):
    run = read(text, bom=True, crlf=True)
    assert run.format == fmt
    if fmt == "csv-rank":
        assert as_dict(run) == {"q1": [("d3", -1), ("d1", -2), ("d2", -3)], "q2": [("d1", -1)]}
    elif fmt != "tsv-rank":
        assert as_dict(run) == EXPECTED


def test_jsonl_score():
    rows = [
        {"qid": "q1", "docid": "d1", "score": 0.0015},
        {"qid": "q1", "docid": "d2", "score": -2},
        {"qid": "q2", "docid": "d1", "score": 10},
        {"qid": "q1", "docid": "d3", "score": 700},
    ]
    run = read("".join(json.dumps(r) + "\n" for r in rows), gz=True)
    assert (run.format, run.lines) == ("jsonl-score", 4)
    assert as_dict(run) == EXPECTED


def test_jsonl_ranking():
    text = '{"qid": "q1", "ranking": ["d3", "d1", 42]}\n{"qid": 2, "ranking": []}\n'
    run = read(text)
    assert (run.format, run.lines, run.qids) == ("jsonl-ranking", 2, ["q1", "2"])
    assert as_dict(run) == {"q1": [("d3", -1.0), ("d1", -2.0), ("42", -3.0)], "2": []}


def test_interleaved_queries_are_grouped_in_first_seen_order():
    text = "b Q0 x 1 1 t\na Q0 x 1 1 t\nb Q0 y 2 0 t\na Q0 z 2 0 t\nc Q0 x 1 1 t\nb Q0 z 3 0 t\n"
    for fast in (True, False):
        run = read(text, fast=fast)
        assert run.qids == ["b", "a", "c"]
        assert as_dict(run) == {
            "b": [("x", 1.0), ("y", 0.0), ("z", 0.0)],
            "a": [("x", 1.0), ("z", 0.0)],
            "c": [("x", 1.0)],
        }


def test_hash_is_not_a_comment():
    # trec_eval v10 reads '#' like any other character (MS MARCO v2.1 ids contain it).
    run = read("#301 Q0 msmarco_v2.1_doc_1#2_3 1 1.0 t\n")
    assert run.qids == ["#301"] and run.docids.tolist() == ["msmarco_v2.1_doc_1#2_3"]
    for fast in (True, False):
        for comment in ("# a comment", "#", "# a b c d e f g"):
            message = error(f"{comment}\n301 Q0 d 1 1.0 t\n", fast=fast)
            assert message.startswith("run.txt:1: ")
            assert message.endswith(HINT)
        message = error("# a b c d e f g\n301 Q0 d 1 1.0 t\n", fast=fast)
        assert message == "run.txt:1: score 'd' is not a number" + HINT


DUP = "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n2 Q0 a 1 3 t\n\n1 Q0 a 3 1 t\n"


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize(
    ("text", "message"),
    [
        (DUP, "run.txt:5: docid 'a' appears twice for query 1 (first at line 1)"),
        (
            "1 Q0 a 1 3 t\n1 Q0 b 2 2\n",
            "run.txt:2: expected 6 columns (qid Q0 docid rank score tag), found 5",
        ),
        ("1 Q0 a 1 3 t\n1 Q0 b 2 high t\n", "run.txt:2: score 'high' is not a number"),
        ("1 Q0 a 1 nan t\n", "run.txt:1: score 'nan' is not a number"),
        ("1 Q0 a 1 1_0 t\n", "run.txt:1: score '1_0' is not a number"),
        (
            "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\xff\n".encode("latin-1"),
            "run.txt:2: invalid UTF-8 at byte 13 of the line",
        ),
        (b"1 Q0 a 1 3 t\n1 Q0 b\x00 2 2 t\n", "run.txt:2: line contains a NUL character"),
        ("1\ta\t1\n1\tb\tx\n", "run.txt:2: rank 'x' is not a non-negative integer"),
        ("1\ta\t1\n1\tb\t0x10\n", "run.txt:2: rank '0x10' is not a non-negative integer"),
        ("1\ta\t1\n1\tb\n", "run.txt:2: expected 3 columns (qid<TAB>docid<TAB>rank), found 2"),
        ("qid,docid,score\n1,a,1\n1,,2\n", "run.txt:3: empty docid"),
        ("qid,docid,score\n1,a,1\n1,b,x\n", "run.txt:3: score 'x' is not a number"),
        ("qid,docid\n1,a\n", "run.txt:1: header has qid and docid but neither score nor rank"),
        (
            '{"qid": "1", "ranking": ["a", "b", "a"]}\n',
            "run.txt:1: docid 'a' appears twice for query 1 (first at this line)",
        ),
        (
            '{"qid": "1", "ranking": ["a"]}\n{"qid": "1", "ranking": ["a"]}\n',
            "run.txt:2: docid 'a' appears twice for query 1 (first at line 1)",
        ),
        (
            '{"qid": "1", "docid": "a", "score": "1"}\n',
            'run.txt:1: "score" must be a number, not str',
        ),
        (
            '{"qid": "1", "docid": "a", "score": NaN}\n',
            "run.txt:1: invalid JSON: NaN is not allowed",
        ),
        (
            '{"qid": "1", "docid": "a", "score": 1}\n{"qid": "1", "ranking": []}\n',
            'run.txt:2: unexpected "ranking"',
        ),
        ('{"qid": "1", "ranking": "a b"}\n', 'run.txt:1: "ranking" must be a list of docids'),
        ("", "run.txt: file is empty"),
        ("\n\n", "run.txt: file is empty"),
        ("1 2 3 4\n", "run.txt:1: this looks like a qrels file (qid 0 docid grade), not a run"),
        ("1 Q0 2 x\n", "run.txt: cannot tell the run format: the first line has 4 columns"),
    ],
)
def test_errors(fast, text, message):
    assert error(text, fast=fast).startswith(message)


def test_whole_file_duplicate_check_applies_with_depth():
    assert error(DUP, depth=1).startswith("run.txt:5: docid 'a' appears twice")


def test_size_guard_applies_to_runs():
    with pytest.raises(FormatError, match="decompressed size exceeds 100 bytes"):
        read(TREC * 20, gz=True, max_bytes=100)


def test_bad_arguments():
    with pytest.raises(ValueError, match="depth"):
        read(TREC, depth=0)
    with pytest.raises(ValueError, match="fmt"):
        read(TREC, fmt="xml")
