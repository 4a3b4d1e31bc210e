"""Holm's step-down adjustment against hand-worked examples."""

from __future__ import annotations

import pytest

from ndcg_labeler.scoring.significance import holm


def test_holm_multiplies_by_the_remaining_count_and_keeps_the_order_monotone() -> None:
    # Sorted: 0.01 (×3 = 0.03), 0.03 (×2 = 0.06), 0.04 (×1 = 0.04, raised to 0.06).
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_holm_caps_at_one_and_counts_undefined_values_in_the_family() -> None:
    # m = 3 although one p-value is undefined: 0.2 × 3 = 0.6, 0.5 × 2 = 1.0.
    assert holm([0.5, None, 0.2]) == [pytest.approx(1.0), None, pytest.approx(0.6)]
    assert holm([0.9, 0.8]) == [1.0, 1.0]
    assert holm([]) == []


def test_one_p_value_is_left_as_it_is() -> None:
    assert holm([0.037]) == [0.037]
