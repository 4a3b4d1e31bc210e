"""RRF, CombSUM and CombMNZ against hand-computed fused scores."""

from __future__ import annotations

import pytest

from ndcg_labeler.scoring.fusion import combmnz, combsum, fuse, min_max, rrf

A = [("d1", 10.0), ("d2", 8.0), ("d3", 6.0)]
B = [("d3", 0.9), ("d4", 0.5), ("d1", 0.1)]


def test_rrf_adds_one_over_k_plus_rank() -> None:
    fused = dict(rrf([A, B], k=60))
    assert fused["d1"] == pytest.approx(1 / 61 + 1 / 63)
    assert fused["d2"] == pytest.approx(1 / 62)
    assert fused["d3"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["d4"] == pytest.approx(1 / 62)
    # d1 and d3 tie, as do d2 and d4: ties go by docid in descending byte order.
    assert [d for d, _ in rrf([A, B])] == ["d3", "d1", "d4", "d2"]


def test_rrf_with_k_1() -> None:
    fused = dict(rrf([A, B], k=1))
    assert fused["d1"] == pytest.approx(1 / 2 + 1 / 4)
    assert fused["d4"] == pytest.approx(1 / 3)


def test_min_max_normalisation() -> None:
    assert min_max([10.0, 8.0, 6.0]) == [1.0, 0.5, 0.0]
    assert min_max([3.0, 3.0]) == [1.0, 1.0]
    assert min_max([]) == []


def test_combsum_adds_normalised_scores() -> None:
    # A: d1 1, d2 0.5, d3 0. B: d3 1, d4 0.5, d1 0.
    fused = combsum([A, B])
    assert dict(fused) == pytest.approx({"d1": 1.0, "d2": 0.5, "d3": 1.0, "d4": 0.5})
    assert [d for d, _ in fused] == ["d3", "d1", "d4", "d2"]


def test_combmnz_multiplies_by_the_number_of_runs_that_found_the_docid() -> None:
    fused = combmnz([A, B])
    assert dict(fused) == pytest.approx({"d1": 2.0, "d2": 0.5, "d3": 2.0, "d4": 0.5})
    three = combmnz([A, B, [("d2", 4.0), ("d4", 2.0)]])
    # d2: 0.5 + 1 = 1.5, twice → 3.0; d4: 0.5 + 0 = 0.5, twice → 1.0.
    assert dict(three) == pytest.approx({"d1": 2.0, "d2": 3.0, "d3": 2.0, "d4": 1.0})
    assert [d for d, _ in three] == ["d2", "d3", "d1", "d4"]


def test_fuse_refuses_unknown_methods() -> None:
    assert fuse([A, B], "combsum") == combsum([A, B])
    with pytest.raises(ValueError, match="rrf, combsum, combmnz"):
        fuse([A, B], "borda")
