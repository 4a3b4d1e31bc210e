"""Textbook dcg / ndcg_at_k against numbers computed by hand and the reference texts."""

from __future__ import annotations

import math

import pytest

from ndcg_labeler.scoring import dcg, ndcg_at_k

LOG2_3 = math.log2(3)  # 1.5849625...
LOG2_5 = math.log2(5)  # 2.3219281...

# The HR example of reference/004: labels chunk_17=3, chunk_42=1, chunk_08=1, chunk_91=0,
# chunk_33=0.
HR_LABELS = {"chunk_17": 3, "chunk_42": 1, "chunk_08": 1, "chunk_91": 0, "chunk_33": 0}
RETRIEVER_A = ["chunk_17", "chunk_91", "chunk_42", "chunk_08", "chunk_33"]
RETRIEVER_B = ["chunk_42", "chunk_17", "chunk_08", "chunk_91", "chunk_33"]


def test_dcg_of_the_design_example_is_exactly_four() -> None:
    # 3/log2(2) + 0/log2(3) + 2/log2(4) = 3/1 + 0 + 2/2 = 4
    assert dcg([3, 0, 2]) == 4.0


def test_dcg_of_nothing_is_zero() -> None:
    assert dcg([]) == 0.0


def test_ndcg_at_k_of_an_ideal_list_is_one() -> None:
    assert ndcg_at_k([3, 2, 1, 0], 3) == 1.0


def test_ndcg_at_k_is_zero_when_the_ideal_is_zero() -> None:
    assert ndcg_at_k([0, 0, 0], 2) == 0.0
    assert ndcg_at_k([], 5) == 0.0


def test_ndcg_at_k_rejects_k_below_one() -> None:
    with pytest.raises(ValueError):
        ndcg_at_k([1], 0)


def test_hr_example_retriever_a() -> None:
    rels = [HR_LABELS[c] for c in RETRIEVER_A]
    assert rels == [3, 0, 1, 1, 0]
    # DCG  = 3/1 + 0/log2(3) + 1/log2(4) + 1/log2(5) + 0 = 3 + 0.5 + 0.430677 = 3.930677
    assert dcg(rels) == pytest.approx(3 + 0.5 + 1 / LOG2_5, abs=1e-15)
    assert round(dcg(rels), 2) == 3.93  # the document's DCG_A
    # IDCG = dcg(3, 1, 1, 0, 0) = 3 + 1/log2(3) + 1/2 = 3 + 0.630930 + 0.5 = 4.130930
    assert round(dcg([3, 1, 1, 0, 0]), 2) == 4.13  # the document's IDCG@5
    # NDCG@5 = 3.930677 / 4.130930 = 0.951523 -> 0.952 as printed
    assert round(ndcg_at_k(rels, 5), 3) == 0.952
    # NDCG@3 = (3 + 0 + 0.5) / 4.130930 = 0.847267 -> 0.847 as printed
    assert round(ndcg_at_k(rels, 3), 3) == 0.847


def test_hr_example_retriever_b_and_the_documents_rounding() -> None:
    rels = [HR_LABELS[c] for c in RETRIEVER_B]
    assert rels == [1, 3, 1, 0, 0]
    # DCG = 1/1 + 3/log2(3) + 1/log2(4) = 1 + 1.892789 + 0.5 = 3.392789 (document: 3.40)
    assert dcg(rels) == pytest.approx(1 + 3 / LOG2_3 + 0.5, abs=1e-15)
    assert round(dcg(rels), 2) == 3.39
    # NDCG@5 = 3.392789 / 4.130930 = 0.821316. The document prints 0.823 because it divides
    # its rounded intermediates: 3.40 / 4.13 = 0.823245. The exact value rounds to 0.821.
    assert round(ndcg_at_k(rels, 5), 3) == 0.821
    assert round(3.40 / 4.13, 3) == 0.823
    # Retriever A still wins, as the document concludes.
    assert ndcg_at_k([3, 0, 1, 1, 0], 5) > ndcg_at_k(rels, 5)
    # NDCG@3: (1, 3, 1) is the same DCG 3.392789 over IDCG@3 4.130930 -> 0.821 again.
    assert round(ndcg_at_k(rels, 3), 3) == 0.821


def test_concierge_dcg_values_of_the_reference() -> None:
    # A: (3, 2, 0, 0, 0) -> 3 + 2/log2(3) = 3 + 1.261860 = 4.261860 (document: 4.26)
    assert round(dcg([3, 2, 0, 0, 0]), 2) == 4.26
    # B: (2, 1, 3, 0, 0) -> 2 + 1/log2(3) + 3/2 = 2 + 0.630930 + 1.5 = 4.130930 (document: 4.13)
    assert round(dcg([2, 1, 3, 0, 0]), 2) == 4.13
    # Ideal of everything judged (3, 2, 1): 3 + 1.261860 + 0.5 = 4.761860 (document: 4.76)
    assert round(dcg([3, 2, 1]), 2) == 4.76
