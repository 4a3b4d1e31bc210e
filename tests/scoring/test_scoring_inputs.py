"""Joining judgments and a run into ranked grade lists."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ndcg_labeler.scoring import Qrel, ScoredDoc, run_inputs

QRELS = [Qrel("q2", "a", 1), Qrel("q1", "x", 3), Qrel("q1", "y", 0), Qrel("q1", "z", 2)]
RUN = [
    ScoredDoc("q1", "y", 0.5),
    ScoredDoc("q1", "x", 0.9),
    ScoredDoc("q1", "u", 0.5),  # unjudged, ties with y: "y" > "u" so y ranks first
    ScoredDoc("q9", "a", 1.0),  # a topic without judgments: ignored
]


def test_run_inputs_ranks_and_looks_up_grades() -> None:
    data = run_inputs(QRELS, RUN)
    assert data.qids == ("q1", "q2")  # judged topics in byte order
    assert data.docids[0].tolist() == ["x", "y", "u"]
    assert data.ranked[0][:2].tolist() == [3.0, 0.0] and math.isnan(data.ranked[0][2])
    assert sorted(data.judged[0].tolist()) == [0, 2, 3]
    assert data.in_run.tolist() == [True, False]
    assert data.ranked[1].size == 0 and data.judged[1].tolist() == [1]


def test_depth_keeps_the_top_of_the_ranking() -> None:
    data = run_inputs(QRELS, RUN, depth=2)
    assert data.docids[0].tolist() == ["x", "y"]


def test_explicit_qids_choose_the_rows_and_their_order() -> None:
    data = run_inputs(QRELS, RUN, qids=["q9", "q1", "q3"])
    assert data.qids == ("q9", "q1", "q3")
    assert np.isnan(data.ranked[0]).all()  # q9 has no judgments: everything unjudged
    assert data.judged[0].size == 0
    assert data.in_run.tolist() == [True, True, False]


def test_duplicates_are_errors_as_in_trec_eval() -> None:
    with pytest.raises(ValueError, match="duplicate judgment"):
        run_inputs([*QRELS, Qrel("q1", "x", 1)], RUN)
    with pytest.raises(ValueError, match="duplicate document"):
        run_inputs(QRELS, [*RUN, ScoredDoc("q1", "x", 0.1)])


def test_depth_must_be_positive() -> None:
    with pytest.raises(ValueError):
        run_inputs(QRELS, RUN, depth=0)
