"""Arrays filled batch by batch in place, so that parsing a large run touches each page once.

Joining a list of per-batch pieces at the end (np.concatenate, pa.concat_arrays) writes every
value twice, into pages of its own each time, and holds both copies at once. A `Filled` array
reserves its capacity up front instead (address space only: a page is only mapped when first
written) and takes each batch where it belongs; it grows by half again, with one copy, only
when the reservation was too small.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


class Filled:
    """A 1-D numpy array appended to in place."""

    def __init__(self, dtype: type | np.dtype, capacity: int) -> None:
        self._data = np.empty(max(capacity, 1), dtype=dtype)
        self.size = 0

    def extend(self, values: np.ndarray) -> None:
        """Append `values` (cast to this array's dtype)."""
        end = self.size + len(values)
        if end > self._data.size:
            grown = np.empty(max(end, self._data.size * 3 // 2), dtype=self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : end] = values
        self.size = end

    def array(self) -> np.ndarray:
        """What was appended (a view, no copy)."""
        return self._data[: self.size]


# pa.array() and Array.to_numpy() import pandas (~45 MB and up to a second of CPU) to ask
# whether they deal with a pandas object; the run parser uses the two below instead, so that a
# refused upload does not pay for it.


def indices(values: np.ndarray) -> pa.Array:
    """Positions for `take`, as an int64 Arrow array over the numpy buffer (no copy)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), values.size, [None, pa.py_buffer(values)])


_NUMBERS = {pa.float64(): np.float64, pa.int64(): np.int64, pa.uint64(): np.uint64}


def numbers(array: pa.Array) -> np.ndarray:
    """A float64, int64, uint64 or boolean Arrow array without nulls as a read-only numpy
    array (no copy, except booleans, which Arrow packs eight to a byte)."""
    n, offset, data = len(array), array.offset, array.buffers()[1]
    if pa.types.is_boolean(array.type):
        if not n:
            return np.zeros(0, dtype=bool)
        bits = np.unpackbits(np.frombuffer(data, np.uint8), count=offset + n, bitorder="little")
        return bits[offset:].view(bool)
    dtype = np.dtype(_NUMBERS[array.type])
    if not n:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(data, dtype=dtype, count=n, offset=offset * dtype.itemsize)


def string_offsets(strings: pa.Array) -> tuple[np.ndarray, pa.Buffer | None]:
    """A (large) string array's len + 1 offsets into its data buffer (int32 or int64, as
    stored; a slice's start past 0), and that buffer."""
    _, off_buf, data_buf = strings.buffers()
    wide = pa.types.is_large_string(strings.type) or pa.types.is_large_binary(strings.type)
    offsets = np.frombuffer(off_buf, dtype=np.int64 if wide else np.int32)
    return offsets[strings.offset : strings.offset + len(strings) + 1], data_buf


class FilledStrings:
    """A LargeStringArray built from string arrays appended in place: their bytes into one
    buffer, their offsets (rebased) into another."""

    def __init__(self, capacity_bytes: int, capacity_strings: int) -> None:
        self._bytes = Filled(np.uint8, capacity_bytes)
        self._offsets = Filled(np.int64, capacity_strings + 1)
        self._offsets.extend(np.zeros(1, dtype=np.int64))

    def extend(self, strings: pa.Array) -> None:
        """Append a (large) string array, a slice of one included. Nulls are not kept."""
        if len(strings) == 0:
            return
        offsets, data_buf = string_offsets(strings)
        begin, end = int(offsets[0]), int(offsets[-1])
        self._offsets.extend(offsets[1:].astype(np.int64) + (self._bytes.size - begin))
        if end > begin:
            self._bytes.extend(np.frombuffer(data_buf, dtype=np.uint8)[begin:end])

    def array(self) -> pa.LargeStringArray:
        """The strings appended so far, as one array over the two buffers (no copy)."""
        offsets, data = self._offsets.array(), self._bytes.array()
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        return pa.Array.from_buffers(pa.large_string(), offsets.size - 1, buffers)
