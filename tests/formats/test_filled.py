"""formats.filled: arrays filled in place equal what joining the pieces gives (numpy, pyarrow)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from ndcg_labeler.formats.filled import Filled, FilledStrings, indices, numbers


@pytest.mark.parametrize("capacity", [1, 7, 1000])  # grows from 1 and 7; never from 1000
def test_filled_equals_concatenate(capacity: int) -> None:
    rng = np.random.default_rng(3)
    pieces = [rng.random(int(n)) for n in rng.integers(0, 60, size=20)]
    filled = Filled(np.float64, capacity)
    for piece in pieces:
        filled.extend(piece)
    assert filled.array().dtype == np.float64
    assert np.array_equal(filled.array(), np.concatenate(pieces))


def test_filled_is_empty_until_extended() -> None:
    assert Filled(np.uint64, 5).array().tolist() == []


@pytest.mark.parametrize("capacity", [(1, 1), (3, 2), (10_000, 1000)])
def test_filled_strings_equal_concat_arrays(capacity: tuple[int, int]) -> None:
    words = ["d1", "", "é", "a#1", "x" * 300, "q\U0001f600", "z"]
    narrow = pa.array(words * 3, type=pa.string())
    pieces = [
        narrow,
        narrow.slice(5, 9),  # a slice: its offsets start past 0
        pa.array(words[::-1], type=pa.large_string()),
        pa.array([], type=pa.string()),
        pa.array(["last"], type=pa.large_string()).slice(0, 1),
    ]
    strings = FilledStrings(*capacity)
    for piece in pieces:
        strings.extend(piece)
    joined = strings.array()
    expected = pa.concat_arrays([p.cast(pa.large_string()) for p in pieces])
    assert joined.type == pa.large_string()
    assert joined.equals(expected)
    joined.validate(full=True)
    assert joined.take(pa.array([0, 4, len(joined) - 1])).to_pylist() == ["d1", "x" * 300, "last"]


def test_filled_strings_with_nothing_appended() -> None:
    empty = FilledStrings(1, 1).array()
    assert len(empty) == 0 and empty.type == pa.large_string()


@pytest.mark.parametrize("kind", ["float64", "int64", "uint64", "bool"])
@pytest.mark.parametrize(("start", "length"), [(0, 0), (0, 21), (3, 11), (13, 8), (20, 1)])
def test_numbers_read_arrow_buffers_like_to_numpy(kind: str, start: int, length: int) -> None:
    """Slices included: their offset is in elements, and booleans are packed eight to a byte."""
    rng = np.random.default_rng(start * 31 + length)
    values = rng.random(21) > 0.5 if kind == "bool" else (rng.random(21) * 1e6).astype(kind)
    array = pa.array(values).slice(start, length)
    got = numbers(array)
    assert got.dtype == np.dtype(kind)
    assert got.tolist() == values[start : start + length].tolist()


def test_indices_take_like_a_list_of_positions() -> None:
    strings = pa.array(["a", "b", "c", "d"])
    assert strings.take(indices(np.array([3, 0, 0, 2], dtype=np.int32))).to_pylist() == [
        "d",
        "a",
        "a",
        "c",
    ]
