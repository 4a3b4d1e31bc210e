"""trec_eval's `all` averaging rules and our mean over defined values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ndcg_labeler.scoring import evaluate, mean_defined, trec_all

NAN = float("nan")


def three_queries():
    """q0: grades 2 at rank 1 of judged {2}; q1: missing from the run, judged {1};
    q2: nothing relevant judged ({0}), one unjudged doc retrieved."""
    ranked = [np.array([2.0, 0.0]), np.array([]), np.array([NAN])]
    judged = [np.array([2, 0]), np.array([1]), np.array([0])]
    return evaluate(ranked, judged, (1, 2)), np.array([True, False, True])


def test_default_mean_covers_queries_in_the_run_only() -> None:
    ev, in_run = three_queries()
    # ndcg: q0 = 1, q2 undefined (trec_eval: 0); q1 not in the run -> (1 + 0) / 2
    assert trec_all(ev, "ndcg", in_run) == 0.5
    assert trec_all(ev, "num_q", in_run) == 2


def test_complete_mean_covers_every_qrels_query_with_missing_as_zero() -> None:
    ev, in_run = three_queries()
    assert trec_all(ev, "ndcg", in_run, complete=True) == pytest.approx(1 / 3, abs=1e-15)
    assert trec_all(ev, "P_1", in_run, complete=True) == pytest.approx(1 / 3, abs=1e-15)
    assert trec_all(ev, "num_q", in_run, complete=True) == 3


def test_counts_are_summed_not_averaged() -> None:
    ev, in_run = three_queries()
    assert trec_all(ev, "num_ret", in_run) == 3  # 2 + 1
    assert trec_all(ev, "num_rel", in_run) == 1  # q0 only
    assert trec_all(ev, "num_rel", in_run, complete=True) == 2  # q1's relevant doc counts
    assert trec_all(ev, "num_rel_ret", in_run, complete=True) == 1


def test_no_in_run_flags_means_every_row_is_in_the_run() -> None:
    ev, _ = three_queries()
    assert trec_all(ev, "ndcg") == pytest.approx(1 / 3, abs=1e-15)


def test_in_run_must_match_the_rows() -> None:
    ev, _ = three_queries()
    with pytest.raises(ValueError):
        trec_all(ev, "ndcg", np.array([True]))


def test_mean_defined_skips_undefined_and_counts_the_rest() -> None:
    assert mean_defined(np.array([1.0, NAN, 0.5])) == (0.75, 2)
    value, count = mean_defined(np.array([NAN, NAN]))
    assert math.isnan(value) and count == 0
    assert mean_defined(np.array([]))[1] == 0


def test_mean_defined_on_an_evaluation_array() -> None:
    ev, _ = three_queries()
    # ndcg: q0 = 1, q1 = 0 (missing from the run: defined, scores 0), q2 undefined
    assert mean_defined(ev.ndcg) == (0.5, 2)
