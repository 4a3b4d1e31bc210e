"""Every per-query and `all` value trec_eval v10 printed for its own test suite, to 4 decimals."""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

import numpy as np
import pytest
from scoring_trec_files import read_expected, read_qrels, read_run

from ndcg_labeler.scoring import Evaluation, Options, RunInputs, evaluate, run_inputs, trec_all
from tests.paths import CONFORMANCE


class Case(NamedTuple):
    """One expected-output file and the trec_eval command line that produced it."""

    qrels: str
    run: str
    threshold: int = 1  # -l
    complete: bool = False  # -c
    cutoffs: tuple[int, ...] = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


CASES = {
    "out.test": Case("qrels.test", "results.test"),
    "out.test.aq": Case("qrels.test", "results.test"),
    "out.test.aqc": Case("qrels.test", "results.trunc", complete=True),
    "out.test.aql": Case("qrels.rel_level", "results.test", threshold=2),
    "out.comment.test": Case("qrels.comment.test", "results.comment.test"),
    # -m P.5,7,3 -m recall.20,2000 -mndcg_cut.10,20,23.4 (23.4 is read as 23)
    "out.test.meas_params": Case("qrels.test", "results.test", cutoffs=(3, 5, 7, 10, 20, 23, 2000)),
}
CHECKED = re.compile(
    r"^(ndcg|ndcg_cut_\d+|P_\d+|recall_\d+|recip_rank|map|num_rel|num_rel_ret|num_ret|num_q)$"
)


@cache
def inputs(name: str) -> RunInputs:
    """The joined qrels and run of a case."""
    case = CASES[name]
    return run_inputs(read_qrels(CONFORMANCE / case.qrels), read_run(CONFORMANCE / case.run))


@cache
def evaluation(name: str) -> Evaluation:
    """Our evaluation of a case, one row per qrels query."""
    case = CASES[name]
    data = inputs(name)
    return evaluate(data.ranked, data.judged, case.cutoffs, Options(threshold=case.threshold))


def expected_rows() -> list[tuple[str, str, str, str]]:
    """(file, measure, qid, printed value) for every value we compute."""
    rows = []
    for name in CASES:
        for (measure, qid), value in read_expected(CONFORMANCE / name).items():
            if CHECKED.match(measure):
                rows.append((name, measure, qid, value))
    return rows


ROWS = expected_rows()


def ours(name: str, measure: str, qid: str) -> float:
    """Our value of what trec_eval printed for (measure, qid), in trec_eval's conventions."""
    data, ev = inputs(name), evaluation(name)
    if qid == "all":
        return trec_all(ev, measure, data.in_run, complete=CASES[name].complete)
    return ev.trec_value(measure, data.qids.index(qid))


@pytest.mark.parametrize(
    ("name", "measure", "qid", "printed"),
    ROWS,
    ids=[f"{name}-{measure}-{qid}" for name, measure, qid, _ in ROWS],
)
def test_value_matches_trec_eval(name: str, measure: str, qid: str, printed: str) -> None:
    value = ours(name, measure, qid)
    if "." in printed:
        assert f"{value:.4f}" == printed
    else:  # counts are printed as integers
        assert value == int(printed)


def test_every_file_contributes_many_values() -> None:
    per_file = {name: sum(1 for row in ROWS if row[0] == name) for name in CASES}
    # 3 queries + all: 9 ndcg_cut + 9 P + 9 recall + ndcg, recip_rank, map and 3 counts.
    assert per_file["out.test.aq"] == per_file["out.test.aqc"] == 33 * 4 + 1
    assert per_file["out.test.aql"] == 33 * 4 + 1
    assert per_file["out.comment.test"] == 15  # only `all` rows: counts, map, RR and P_k
    assert per_file["out.test"] == 15
    # P_3/5/7, recall_20/2000 and ndcg_cut_10/20/23 for 3 topics and all
    assert per_file["out.test.meas_params"] == 8 * 4


def test_parsers_keep_hash_marks_inside_docids_and_ignore_junk_columns() -> None:
    qrels = read_qrels(CONFORMANCE / "qrels.comment.test")
    assert len(qrels) == 5890
    assert qrels[0].docid == "msmarco_v2.1_doc_00_880019750#4_1633802806"
    assert len(read_run(CONFORMANCE / "results.comment.test")) == 30100
    assert len(read_run(CONFORMANCE / "results.trunc")) == 584  # num_ret in out.test.aqc


def test_run_topics_without_qrels_are_ignored() -> None:
    # results.comment.test ranks 301 topics; only the 31 of the qrels count (num_q = 31).
    data = inputs("out.comment.test")
    assert len(data.qids) == 31 and data.in_run.all()


def test_queries_without_relevant_documents_still_count_in_the_mean() -> None:
    # Topic 2024-36302 has 36 judged documents, none relevant. trec_eval v10 averages over
    # every qrels topic (31), so its 0 pulls the mean down: map 0.2689, not 0.2779 (/30).
    ev = evaluation("out.comment.test")
    qid = inputs("out.comment.test").qids.index("2024-36302")
    assert ev.num_rel[qid] == 0 and np.isnan(ev.ap[qid])
    assert f"{trec_all(ev, 'map'):.4f}" == "0.2689"
    assert f"{np.nanmean(ev.ap):.4f}" == "0.2779"


def test_complete_flag_counts_a_missing_topic_as_zero() -> None:
    # results.trunc has no line for topic 302: with -c it is in the mean with 0 everywhere
    # but num_rel (77 relevant documents still count in the `all` sum).
    data, ev = inputs("out.test.aqc"), evaluation("out.test.aqc")
    i = data.qids.index("302")
    assert not data.in_run[i]
    assert (ev.num_ret[i], ev.num_rel[i], ev.trec_value("ndcg", i)) == (0, 77, 0.0)
    with_c = trec_all(ev, "ndcg", data.in_run, complete=True)
    without_c = trec_all(ev, "ndcg", data.in_run, complete=False)
    assert with_c == pytest.approx(without_c * 2 / 3, abs=1e-15)
    assert trec_all(ev, "num_q", data.in_run, complete=False) == 2
