"""How one query's ranked list is stored (RunQuery.docids, RunQuery.scores): compact, exact.

Version 1 (a two-byte header, b"\\xff\\x01"): the newline-joined docids zlib-compressed,
and the float64 scores either as a decimal (every score k / 10**p for int64 k, p <= 6, stored
as the first k and the zigzag deltas in as few bytes as the largest needs) or, when that would
not give back every score bit for bit, raw float64. Encoding decodes its own decimal form and
compares the bits before choosing it, so decode(encode(x)) == x whatever x holds (ties, -0.0,
NaN, inf).

Legacy rows (before version 1) hold the docids as plain UTF-8, which never starts with 0xff,
and the scores as raw float64: the docids' first byte tells the two apart for both columns.
"""

from __future__ import annotations

import zlib

import numpy as np

_MAGIC = 0xFF  # never the first byte of UTF-8 text: a legacy docids blob cannot start with it
_VERSION = 1
_HEADER = bytes((_MAGIC, _VERSION))
_RAW, _DECIMAL = 0, 1  # score modes
_MAX_PLACES = 6
_LIMIT = 1 << 53  # |k| below it: float64(k) is exact, so k / 10**p rounds once, correctly
# Level 1: the upload compresses ~10 MB of docids per 1,000 queries; higher levels save
# little on ids and cost seconds per full run.
_LEVEL = 1


def is_legacy(docids_blob: bytes | memoryview) -> bool:
    """The row was stored before the versioned encoding (plain docids, raw float64 scores)."""
    return len(docids_blob) == 0 or docids_blob[0] != _MAGIC


def encode_docids(joined: bytes | memoryview) -> bytes:
    """The stored form of a query's newline-joined docids."""
    return _HEADER + zlib.compress(joined, _LEVEL)


def decode_docids(blob: bytes | memoryview) -> bytes:
    """The newline-joined docids of a stored blob (either encoding)."""
    if is_legacy(blob):
        return bytes(blob)
    _check_header(blob)
    return zlib.decompress(memoryview(blob)[2:])


def decode_top_docids(blob: bytes | memoryview, count: int) -> list[str]:
    """The first `count` docids of a stored blob (either encoding), best first: only as much
    of the list is decompressed as they need (a comparison reads the top 10 of runs of 1,000).
    The same as decode_docids(blob).decode().split("\\n", count)[:count] (none when empty)."""
    if is_legacy(blob):
        text = bytes(blob).decode("utf-8")
        return text.split("\n", count)[:count] if text and count > 0 else []
    _check_header(blob)
    if count <= 0:
        return []
    unzip = zlib.decompressobj()
    data = memoryview(blob)[2:]
    out = b""
    start, size = 0, 16 * count  # compressed bytes fed at a time (docids pack ~3 to 1)
    while start < len(data) and not unzip.eof:
        # Feeding the input in growing slices (not all of it with an output limit, which
        # copies the unconsumed rest on every call) keeps the work near the head's size.
        out += unzip.decompress(data[start : start + size])
        start, size = start + size, size * 2
        parts = out.split(b"\n", count)
        if len(parts) > count:  # the first `count` are whole (the last part may be cut)
            head = out[: len(out) - len(parts[count]) - 1]
            return head.decode("utf-8").split("\n")
    out += unzip.flush()
    text = out.decode("utf-8")  # the whole list: fewer than `count` docids, or just as many
    return text.split("\n", count)[:count] if text else []


def encode_scores(scores: np.ndarray | bytes | memoryview) -> bytes:
    """The stored form of a query's float64 scores (rank order), exact to the bit."""
    values = _as_float64(scores)
    decimal = _decimal(values)
    if decimal is not None:
        return decimal
    return _HEADER + bytes((_RAW,)) + values.tobytes()


def decode_scores(blob: bytes | memoryview, docids_blob: bytes | memoryview) -> np.ndarray:
    """The float64 scores of a stored blob; `docids_blob` (same row) tells the encoding."""
    if is_legacy(docids_blob):
        return np.frombuffer(bytes(blob), dtype=np.float64)
    _check_header(blob)
    view = memoryview(blob)
    mode = view[2]
    if mode == _RAW:
        return np.frombuffer(bytes(view[3:]), dtype=np.float64)
    if mode == _DECIMAL:
        return _from_decimal(view[3:])
    raise ValueError(f"unknown stored score mode {mode}")


def encode_ranked(
    joined: bytes | memoryview, scores: np.ndarray | bytes | memoryview
) -> tuple[bytes, bytes]:
    """(docids, scores) as stored, for one query's ranked list."""
    return encode_docids(joined), encode_scores(scores)


def decode_ranked(
    docids_blob: bytes | memoryview, scores_blob: bytes | memoryview
) -> tuple[bytes, np.ndarray]:
    """(newline-joined docids, float64 scores) of one stored row, whichever its encoding."""
    return decode_docids(docids_blob), decode_scores(scores_blob, docids_blob)


def _check_header(blob: bytes | memoryview) -> None:
    """Refuse a version this code does not know (a newer release wrote it)."""
    if len(blob) < 2 or blob[1] != _VERSION:
        raise ValueError("stored ranked list has an unknown encoding version")


def _as_float64(scores: np.ndarray | bytes | memoryview) -> np.ndarray:
    """The scores as a contiguous float64 array (no copy when they already are one)."""
    if isinstance(scores, np.ndarray):
        return np.ascontiguousarray(scores, dtype=np.float64)
    return np.frombuffer(bytes(scores), dtype=np.float64)


def _decimal(values: np.ndarray) -> bytes | None:
    """The decimal form of `values`, or None when it would not give back every bit."""
    if values.size == 0 or not np.isfinite(values).all():
        return None
    if float(np.abs(values).max()) * 10**_MAX_PLACES >= _LIMIT:
        return None
    k = np.rint(values * 10**_MAX_PLACES).astype(np.int64)
    places = _MAX_PLACES
    # Fewer places when every k allows it: smaller deltas for integer-ish scores.
    while places > 0 and not (k % 10).any():
        k //= 10
        places -= 1
    deltas = k[:-1] - k[1:]  # rank order: mostly >= 0, and small
    zigzag = ((deltas << 1) ^ (deltas >> 63)).view(np.uint64).astype("<u8", copy=False)
    width = max((int(zigzag.max(initial=0)).bit_length() + 7) // 8, 1)
    # The first k in full, then the low `width` bytes of each delta: the low bytes are near
    # random, so zlib saved ~1% at several times the cost of everything else.
    packed = zigzag.view(np.uint8).reshape(-1, 8)[:, :width].tobytes()
    first = np.array([k[0]], dtype="<i8").tobytes()
    blob = _HEADER + bytes((_DECIMAL, places, width)) + first + packed
    back = _from_decimal(memoryview(blob)[3:])
    if back.shape != values.shape or not np.array_equal(back.view(np.int64), values.view(np.int64)):
        return None
    return blob


def _from_decimal(payload: memoryview) -> np.ndarray:
    """Scores from a decimal payload: places, width, the first k, then each zigzag delta's low
    `width` bytes."""
    places, width = payload[0], payload[1]
    first = np.frombuffer(payload[2:10], dtype="<i8")
    packed = np.frombuffer(payload[10:], dtype=np.uint8).reshape(-1, width)
    wide = np.zeros((packed.shape[0], 8), dtype=np.uint8)
    wide[:, :width] = packed
    zigzag = wide.view("<u8").ravel().astype(np.uint64, copy=False)
    deltas = (zigzag >> np.uint64(1)).view(np.int64) ^ -(zigzag & np.uint64(1)).view(np.int64)
    k = np.empty(deltas.size + 1, dtype=np.int64)
    k[0] = first[0]
    # k[i] = k[0] - (d[0] + ... + d[i-1]): each delta runs from one rank to the next.
    np.subtract(first[0], np.cumsum(deltas), out=k[1:])
    return k.astype(np.float64) / float(10**places)
