"""Runs against trec_eval's own test data, the depth cut, and fast-path/line-path agreement."""

import random
import re

import numpy as np
import pytest

from ndcg_labeler.formats import run_arrow, runs
from ndcg_labeler.formats.qrels import read_qrels
from ndcg_labeler.formats.runs import cut_depth, read_run

from .util import CONFORMANCE, OneWay, upload


def measure(out_file, name):
    """{qid: value} of one measure in a trec_eval output file."""
    text = (CONFORMANCE / out_file).read_text()
    return {m[1]: float(m[2]) for m in re.finditer(rf"^{name}\s+(\S+)\s+(\S+)$", text, re.M)}


def trec_eval_order(docids, scores):
    """Docids ranked as trec_eval ranks them: score descending, then docid descending."""
    pairs = sorted(zip(docids, scores, strict=True), key=lambda p: p[0], reverse=True)
    pairs.sort(key=lambda p: p[1], reverse=True)
    return [d for d, _ in pairs]


@pytest.fixture
def no_line_parser(monkeypatch):
    """Fail the test if the line-by-line parser runs (the fast path must handle the file)."""

    def refuse(*args, **kwargs):
        raise AssertionError("fell back to the line parser")

    monkeypatch.setattr(runs, "collect", refuse)
    monkeypatch.setattr(runs, "collect_whitespace", refuse)


def test_comment_test_run_gives_the_docs_trec_eval_scored(no_line_parser):
    run = read_run(CONFORMANCE / "results.comment.test")
    assert (run.format, run.lines, len(run.qids)) == ("trec", 30100, 301)
    counts = dict(zip(run.qids, np.diff(run.offsets).tolist(), strict=True))
    judged = {r.qid for r in read_qrels(CONFORMANCE / "qrels.comment.test")}
    assert judged <= set(counts)
    # trec_eval (no -c) evaluates the qrels' topics only.
    assert sum(counts[q] for q in judged) == measure("out.comment.test", "num_ret")["all"]
    assert all("#" in d for d in run.docids)


def test_results_test_with_tabs_and_padding(no_line_parser):
    run = read_run(CONFORMANCE / "results.test")
    num_ret = measure("out.test.aq", "num_ret")
    counts = dict(zip(run.qids, np.diff(run.offsets).tolist(), strict=True))
    assert counts == {q: int(v) for q, v in num_ret.items() if q != "all"}


def test_results_trunc_interleaved_queries_and_trailing_junk():
    run = read_run(CONFORMANCE / "results.trunc")
    num_ret = measure("out.test.aqc", "num_ret")
    counts = dict(zip(run.qids, np.diff(run.offsets).tolist(), strict=True))
    assert counts == {q: int(v) for q, v in num_ret.items() if v and q != "all"}


def test_depth_breaks_ties_by_docid_descending():
    full = read_run(CONFORMANCE / "results.comment.test")
    cut = read_run(CONFORMANCE / "results.comment.test", depth=87)
    assert cut.lines == full.lines == 30100
    i = cut.qids.index("2024-214467")
    kept = set(cut.entries(i)[0].tolist())
    tied = [f"msmarco_v2.1_doc_15_215900874#{n}_" for n in range(3, 10)]
    assert [any(d.startswith(t) for d in kept) for t in tied] == [False] * 4 + [True] * 3
    for q, docids, scores in full.items():
        expected = trec_eval_order(docids.tolist(), scores.tolist())[:87]
        j = cut.qids.index(q)
        assert set(cut.entries(j)[0].tolist()) == set(expected)


def test_depth_keeps_file_order_and_offsets():
    run = read_run(upload("q Q0 a 1 1 t\nq Q0 b 2 3 t\nq Q0 c 3 2 t\nr Q0 a 1 0 t\n"), depth=2)
    assert run.offsets.tolist() == [0, 2, 3]
    assert run.docids.tolist() == ["b", "c", "a"]
    assert run.scores.tolist() == [3.0, 2.0, 0.0]


def test_cut_depth_matches_brute_force_with_heavy_ties():
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 30)
        docids = np.array(rng.sample([f"d{i}" for i in range(60)] + ["Z", "é", "a#1"], n), object)
        scores = np.array(
            [rng.choice([0.0, -0.0, 1.0, 2.5, -1e-3, float("inf")]) for _ in range(n)]
        )
        depth = rng.randint(1, n + 2)
        offsets, kept, _ = cut_depth(np.array([0, n]), docids, scores, depth)
        assert offsets.tolist() == [0, min(n, depth)]
        assert set(kept.tolist()) == set(trec_eval_order(docids.tolist(), scores.tolist())[:depth])


CASES = [
    "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n",
    "1 Q0 a 1 3 t\n1 Q0 b 2 2 t",
    "1 Q0 a 1 3 t\r\n1 Q0 b 2 2 t\r\n",
    "1 Q0 a 1 3 t\r1 Q0 b 2 2 t\n",  # a bare CR is whitespace to trec_eval
    "1 Q0 a 1 3 t\n\n\n1 Q0 b 2 2 t\n",
    "1 Q0 a\x0b1 3 t\n",
    "1 Q0 a\x0c1 3 t x\n",
    "1  Q0 a 1 3 t\n",
    " 1 Q0 a 1 3 t\n",
    "1 Q0 a 1 3 t \n",
    "1 Q0 a 1 3 t\t\n",
    "1 Q0 a\t1 3 t\n",
    "1 Q0 a 1 +inf t\n1 Q0 b 1 -Infinity t\n1 Q0 c 1 1e999 t\n",
    "1 Q0 a 1 .5 t\n1 Q0 b 1 5. t\n1 Q0 c 1 -0 t\n1 Q0 d 1 00012 t\n",
    "1 Q0 a 1 NA t\n",
    "1 Q0 a 1 null t\n",
    "1 Q0 a 1 0x10 t\n",
    "1 Q0 a 1 ٣ t\n",
    "1 Q0 é 1 3 t\n2 Q0 日本 1 3 t\n",
    "1\ta\t1\n1\tb\t+2\n",
    "1\ta\t1\n1\tb\t-2\n",
    "1\ta\t99999999999999999999999\n",
    "1\ta\t1\n1\tb\t 2\n",
    "1 a 1\n1 b 2\n",
    "1\tQ0\ta\t1\t  3\tt\n1\tQ0\tb\t2\t2.5  \tt\n",
    "1\tQ0\ta b\t1\t3\tt\n",
    "1\tQ0\ta\t1 \t3\tt\n",
    "1\tQ0\ta\t1\t3\tt  \n",
    " 1\tQ0\ta\t1\t3\tt\n",
    "1\tQ0\ta\t1\t3 4\tt\n",
    "1\tQ0\ta\t1\t3\t\tt\n",
    "1\ta\t 1\n",
    # Invalid UTF-8 is refused in any column, even those trec_eval never reads as text.
    b"1 Q0 a 1 3 t\xff\n1 Q0 b 2 2 t\n",
    b"1 \xe9 a 1 3 t\n",
    b"1 Q0 a 9\xc3 3 t\n",
    b"1 Q0 a\xff 1 3 t\n",
    b"1\ta\xff\t1\n",
]


INTERLEAVED = "b Q0 x 1 1 t\na Q0 x 1 1 t\nb Q0 y 2 0 t\na Q0 z 2 0 t\nc Q0 x 1 1 t\nb Q0 z 3 0 t\n"
CASES += [
    INTERLEAVED,
    INTERLEAVED + "a Q0 x 3 0 t\n",
    "".join(f"1 Q0 d{i} {i} 1 t\n" for i in range(40)) + "1 Q0 d3 1 0 t\n",
    "".join(f"{i // 7} Q0 d{i % 7} {i} 1 t\n" for i in range(60)),
]


@pytest.fixture(params=[4 << 20, 64], ids=["big-blocks", "tiny-blocks"])
def block_size(request, monkeypatch):
    """Run with pyarrow's usual block size and with blocks of a few lines (batch seams)."""
    monkeypatch.setattr(run_arrow, "_BLOCK", request.param)


@pytest.mark.parametrize("text", CASES)
def test_fast_path_agrees_with_line_parser(text, block_size):
    outcomes = []
    for fast in (True, False):
        try:
            run = read_run(upload(text), "x", fast=fast)
            outcomes.append(
                (
                    run.format,
                    run.lines,
                    run.qids,
                    run.offsets.tolist(),
                    run.docids.tolist(),
                    run.scores.tolist(),
                )
            )
        except ValueError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]


def test_clean_interleaved_run_stays_on_the_fast_path(no_line_parser, block_size):
    run = read_run(upload(INTERLEAVED), "x")
    assert run.qids == ["b", "a", "c"]
    assert run.docids.tolist() == ["x", "y", "z", "x", "z", "x"]
    assert run.offsets.tolist() == [0, 3, 5, 6]


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("longer", [True, False], ids=["ids-grow", "lines-shrink"])
def test_the_fast_path_grows_its_arrays_past_the_first_blocks_estimate(
    no_line_parser, gz: bool, longer: bool, monkeypatch
) -> None:
    # The arrays are reserved from the first block: later docids longer than its (more bytes)
    # or later lines shorter (more entries) than its make them grow.
    monkeypatch.setattr(run_arrow, "_BLOCK", 64)
    ids = ["d" * (1 + i if longer else 120 - i) for i in range(120)]
    text = "".join(f"q{i // 9} Q0 {d} {i} {i % 3} t\n" for i, d in enumerate(ids))
    run = read_run(upload(text, gz=gz), "x")
    assert run.docids.tolist() == ids
    assert run.scores.tolist() == [float(i % 3) for i in range(120)]
    assert run.offsets.tolist() == [*range(0, 120, 9), 120]
    assert run.newline_ended.to_pylist() == [d + "\n" for d in ids]


def test_non_seekable_stream_uses_the_line_parser():
    data = upload("1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n", gz=True).getvalue()
    assert read_run(OneWay(data), "x").docids.tolist() == ["a", "b"]


def test_stream_is_read_from_its_current_position():
    stream = upload("junk\n1 Q0 a 1 3 t\n1 Q0 a 2 2 t\n")
    stream.seek(5)
    with pytest.raises(
        ValueError, match=r"^x:2: docid 'a' appears twice for query 1 \(first at line 1\)"
    ):
        read_run(stream, "x")
