"""Compact run storage (formats.run_storage): decode(encode(x)) == x bit for bit, whatever the
docids and float64 scores, legacy rows still read, and short decimals take a few bytes."""

from __future__ import annotations

import io
import random
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndcg_labeler.formats import (
    FormatError,
    decode_docids,
    decode_ranked,
    decode_top_docids,
    encode_ranked,
    read_run,
)

# Docids as the parsers allow them: no whitespace (newlines separate them), any other unicode.
DOCID = st.text(
    st.characters(blacklist_categories=["Cs", "Zs", "Zl", "Zp", "Cc"]), min_size=1, max_size=12
)
FLOAT = st.floats(allow_nan=True, allow_infinity=True, width=64)
SHORT_DECIMAL = st.integers(-(10**12), 10**12).map(lambda k: k / 1e6)
TIED = st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.25, 1e-300, 5e-324, 1.7976931348623157e308])


def _bits(values: np.ndarray) -> list[int]:
    return np.ascontiguousarray(values, dtype=np.float64).view(np.int64).tolist()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(DOCID, max_size=40),
    st.data(),
    st.booleans(),
)
def test_any_ranked_list_comes_back_bit_for_bit(docids: list[str], data, ordered: bool) -> None:
    scores = data.draw(
        st.lists(st.one_of(FLOAT, SHORT_DECIMAL, TIED), min_size=len(docids), max_size=len(docids))
    )
    if ordered:  # as stored after ranking: mostly descending, with ties
        scores = sorted(scores, key=lambda s: (s != s, -s if s == s else 0.0))
    joined = "\n".join(docids).encode()
    values = np.array(scores, dtype=np.float64)
    stored = encode_ranked(joined, values)
    text, back = decode_ranked(*stored)
    assert text == joined and decode_docids(stored[0]) == joined
    assert _bits(back) == _bits(values)


@settings(max_examples=200, deadline=None)
@given(st.lists(SHORT_DECIMAL, min_size=1, max_size=200))
def test_short_decimals_are_stored_as_exact_integers(scores: list[float]) -> None:
    values = np.array(sorted(scores, reverse=True))
    _, stored = encode_ranked(b"", values)
    assert stored[2] == 1  # the decimal mode, not raw float64
    assert _bits(decode_ranked(encode_ranked(b"", values)[0], stored)[1]) == _bits(values)


def test_negative_zero_nan_and_huge_fall_back_to_raw_float64() -> None:
    for values in ([1.0, -0.0], [float("nan"), 1.0], [1e300, 1.0], [0.1 + 0.2], [float("-inf")]):
        array = np.array(values)
        docids, stored = encode_ranked(b"a", array)
        assert stored[2] == 0 and len(stored) == 3 + 8 * len(values)
        assert _bits(decode_ranked(docids, stored)[1]) == _bits(array)


def test_legacy_rows_still_read() -> None:
    scores = np.array([5.5, 2.0, 2.0])
    text, back = decode_ranked(b"x\nccc\nbb", scores.tobytes())
    assert text == b"x\nccc\nbb" and _bits(back) == _bits(scores)
    assert decode_ranked(b"", b"")[0] == b"" and decode_ranked(b"", b"")[1].size == 0


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="version"):
        decode_docids(b"\xff\x02" + zlib.compress(b"a"))


def test_nan_scores_are_still_refused_by_the_parser() -> None:
    with pytest.raises(FormatError, match=r"run\.trec:1"):
        read_run(io.BytesIO(b"q1 Q0 d1 1 nan x\n"), "run.trec")


def test_a_bench_like_list_takes_a_third_of_the_bytes() -> None:
    # The bench's query (bench/many_runs.py): 1,000 ids "QID-xN", scores 1000 - rank + U(0, 1)
    # with 6 decimals. Raw: 9-10 bytes of id + 1 newline + 8 of float64 an entry.
    rng = random.Random(7)
    docids = [f"300017-x{n}" for n in range(1000)]
    rng.shuffle(docids)
    scores = sorted((round(1000 - r + rng.random(), 6) for r in range(1, 1001)), reverse=True)
    joined = "\n".join(docids).encode()
    stored = encode_ranked(joined, np.array(scores))
    raw = len(joined) + 8 * len(scores)
    assert sum(map(len, stored)) < raw / 3


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(DOCID, max_size=300), st.integers(0, 320), st.booleans())
def test_the_top_docids_are_the_first_ones_of_the_whole_list(
    docids: list[str], count: int, legacy: bool
) -> None:
    """decode_top_docids decompresses only a prefix; its answer is the whole list's head,
    as splitting the fully decoded text gives it (multi-byte docids cut across steps too)."""
    joined = "\n".join(docids).encode()
    blob = joined if legacy else encode_ranked(joined, np.zeros(len(docids)))[0]
    text = decode_docids(blob).decode()
    expected = text.split("\n", count)[:count] if text and count else []
    assert decode_top_docids(blob, count) == expected == docids[:count]


def test_the_top_of_a_long_list_needs_only_a_prefix() -> None:
    docids = [f"doc-{n:07d}-{random.Random(n).random():.12f}" for n in range(5000)]
    blob = encode_ranked("\n".join(docids).encode(), np.zeros(5000))[0]
    assert decode_top_docids(blob, 10) == docids[:10]
    assert decode_top_docids(blob, 4999) == docids[:4999]
    assert decode_top_docids(blob, 5000) == decode_top_docids(blob, 9000) == docids
    # Docids far longer than the step guesses (64 bytes each): several steps, some cutting
    # a multi-byte character in two.
    long = [("é" * 150) + str(n) for n in range(40)]
    blob = encode_ranked("\n".join(long).encode(), np.zeros(40))[0]
    assert decode_top_docids(blob, 10) == long[:10] and decode_top_docids(blob, 41) == long
