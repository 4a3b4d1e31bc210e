"""Permutations that move few entries, applied in place: the same arrays as a full take."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from ndcg_labeler.formats.filled import FilledStrings
from ndcg_labeler.formats.permute import permute_strings, permute_values


def _writable(values: list[str]) -> pa.LargeStringArray:
    """A string array over buffers of our own (as the run parser makes them)."""
    filled = FilledStrings(sum(len(v.encode()) for v in values), len(values))
    filled.extend(pa.array(values, type=pa.large_string()))
    return filled.array()


def _moves(perm: list[int]) -> tuple[np.ndarray, np.ndarray]:
    order = np.array(perm, dtype=np.intp)
    moved = np.flatnonzero(order != np.arange(order.size))
    return moved, order[moved]


@pytest.mark.parametrize(
    "perm",
    [
        [0, 1, 2, 3],  # nothing moves
        [1, 0, 2, 3],
        [2, 1, 0, 3],  # an entry that stays between two that swap: its bytes shift
        [3, 2, 1, 0],
        [0, 2, 1, 4, 3],  # two ranges side by side
        [4, 1, 2, 3, 0],  # one range with stays inside
        [1, 2, 0, 3, 5, 4],
    ],
)
def test_strings_and_values_end_as_a_take_would_leave_them(perm: list[int]) -> None:
    values = ["a", "bbbb", "cc", "ddddddd", "e", "ffff"][: len(perm)]
    strings = _writable(values)
    numbers = np.arange(len(perm), dtype=np.float64) * 1.5
    moved, sources = _moves(perm)
    assert permute_strings(strings, moved, sources, limit=len(perm))
    permute_values(numbers, moved, sources)
    strings.validate(full=True)
    assert strings.to_pylist() == [values[i] for i in perm]
    assert numbers.tolist() == [i * 1.5 for i in perm]


def test_random_tie_groups_of_a_long_array() -> None:
    rng = np.random.default_rng(2)
    values = [f"doc{int(v)}" for v in rng.integers(0, 10 ** rng.integers(1, 9, size=5000))]
    perm = np.arange(len(values))
    start = 0
    while start < len(values):  # shuffle short groups, as ties reordered by docid would be
        size = int(rng.integers(1, 6))
        if rng.random() < 0.3:
            perm[start : start + size] = rng.permutation(perm[start : start + size])
        start += size
    strings = _writable(values)
    moved, sources = _moves(perm.tolist())
    assert moved.size > 100
    assert permute_strings(strings, moved, sources, limit=len(values))
    strings.validate(full=True)
    assert strings.to_pylist() == [values[i] for i in perm.tolist()]


def test_too_many_entries_to_rewrite_leave_the_array_alone() -> None:
    values = ["a", "bb", "ccc", "dddd"]
    strings = _writable(values)
    moved, sources = _moves([3, 2, 1, 0])
    assert not permute_strings(strings, moved, sources, limit=3)
    assert strings.to_pylist() == values


def test_read_only_buffers_are_left_alone() -> None:
    data = b"abbccc"
    offsets = np.array([0, 1, 3, 6], dtype=np.int64).tobytes()
    strings = pa.Array.from_buffers(
        pa.large_string(), 3, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    moved, sources = _moves([2, 1, 0])
    assert not permute_strings(strings, moved, sources, limit=3)
    assert strings.to_pylist() == ["a", "bb", "ccc"]
