"""Writers: TREC qrels and runs round-trip through the readers in trec_eval order."""

import io

import pytest

from ndcg_labeler.formats.qrels import read_qrels
from ndcg_labeler.formats.records import QrelRecord as Q
from ndcg_labeler.formats.runs import read_run
from ndcg_labeler.formats.writers import write_trec_qrels, write_trec_run

from .util import upload


def test_qrels_round_trip():
    records = [Q("301", "d#1", 3), Q("301", "d2", -1), Q("q2", "x", 0)]
    out = io.StringIO()
    assert write_trec_qrels(records, out) == 3
    assert out.getvalue() == "301 0 d#1 3\n301 0 d2 -1\nq2 0 x 0\n"
    assert list(read_qrels(upload(out.getvalue()), "w")) == records


def test_run_is_written_in_trec_eval_order_and_round_trips():
    run = read_run(upload("q Q0 a 1 1 t\nq Q0 c 2 2 t\nq Q0 b 3 1 t\nr Q0 z 1 1.5e-3 t\n"), "r")
    out = io.StringIO()
    assert write_trec_run(run, out, tag="mine") == 4
    assert out.getvalue() == (
        "q Q0 c 1 2.0 mine\nq Q0 b 2 1.0 mine\nq Q0 a 3 1.0 mine\nr Q0 z 1 0.0015 mine\n"
    )
    again = read_run(upload(out.getvalue()), "w")
    assert again.qids == run.qids
    pairs = sorted(zip(again.docids.tolist(), again.scores.tolist(), strict=True))
    assert pairs == sorted(zip(run.docids.tolist(), run.scores.tolist(), strict=True))


@pytest.mark.parametrize("bad", [Q("", "d", 1), Q("q", "d 1", 1), Q("q\t", "d", 1)])
def test_qrels_ids_must_be_tokens(bad):
    with pytest.raises(ValueError, match="cannot be written"):
        write_trec_qrels([bad], io.StringIO())


def test_run_tag_must_be_a_token():
    run = read_run(upload("q Q0 a 1 1 t\n"), "r")
    with pytest.raises(ValueError, match="tag"):
        write_trec_run(run, io.StringIO(), tag="two words")
