"""Compact stored scores (formats.score_storage): decode(encode(x)) == x bit for bit for any
named arrays (every NaN payload, -0.0, subnormals, huge values), legacy .npz rows still read,
and scores shaped as scoring makes them take a fraction of the .npz's bytes."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndcg_labeler.formats import (
    decode_score_arrays,
    encode_score_arrays,
    is_compact_scores,
    legacy_score_blob,
)

# Names that reach every stored form: ratios (ndcg* from dcg* / idcg*), counts (P_k, recall_k
# by num_rel, judged_at_k), XOR chains across cutoffs, ints, flags.
CUTOFFS = (1, 3, 10)
FLOAT_NAMES = (
    "dcg",
    "idcg",
    "ndcg",
    "map",
    *(
        f"{stem}_{k}"
        for stem in ("dcg_cut", "idcg_cut", "ndcg_cut", "P", "recall")
        for k in CUTOFFS
    ),
    *(f"judged_at_{k}" for k in CUTOFFS),
)
# Any float64 at all: every bit pattern (NaN payloads, signalling NaNs, -0.0, subnormals, inf).
ANY_BITS = st.integers(0, 2**64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0])
SPECIAL = st.sampled_from(
    [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e-300,
     float("inf"), float("-inf"), float("nan"), 1.0, 0.5, 1 / 3, 2 / 3]
)  # fmt: skip
VALUE = st.one_of(ANY_BITS, SPECIAL, st.floats(width=64), st.integers(0, 12).map(float))


def _bits(values: np.ndarray) -> bytes:
    return np.ascontiguousarray(values).tobytes()


def _assert_same(back: dict[str, np.ndarray], arrays: dict[str, np.ndarray]) -> None:
    assert set(back) == set(arrays)
    for name, values in arrays.items():
        assert back[name].dtype == values.dtype, name
        assert back[name].shape == values.shape, name
        assert _bits(back[name]) == _bits(values), name
        assert back[name].flags.writeable, name  # the store catches them up in place


@st.composite
def score_arrays(draw: st.DrawFn) -> dict[str, np.ndarray]:
    """Named arrays of one length: arbitrary floats, or consistent ones (c / k, dcg / idcg)."""
    n = draw(st.integers(0, 24))
    counts = st.lists(st.integers(0, 12), min_size=n, max_size=n)
    num_rel = np.array(draw(counts), dtype=np.int64)
    arrays: dict[str, np.ndarray] = {"num_rel": num_rel}
    for name in draw(st.lists(st.sampled_from(FLOAT_NAMES), unique=True)):
        kind = draw(st.sampled_from(["any", "count", "ratio"]))
        k = int(name.rsplit("_", 1)[1]) if name[-1].isdigit() else 1
        if kind == "count":
            c = np.array(draw(counts), dtype=np.float64)
            bottom = num_rel.astype(np.float64) if name.startswith("recall") else float(k)
            with np.errstate(all="ignore"):
                arrays[name] = np.where(np.asarray(bottom) > 0, c / bottom, np.nan)
        else:
            arrays[name] = np.array(draw(st.lists(VALUE, min_size=n, max_size=n)), dtype="<f8")
    for name in [n for n in arrays if n.startswith("ndcg")]:
        top, bottom = arrays.get("d" + name[1:]), arrays.get("id" + name[1:])
        if top is not None and bottom is not None and draw(st.booleans()):
            with np.errstate(all="ignore"):
                arrays[name] = np.where(bottom > 0, top / bottom, np.nan)
    if draw(st.booleans()):
        ids = st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n)
        arrays["meta_query_ids"] = np.array(draw(ids), dtype=np.int64)
        arrays["meta_missing"] = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        arrays["meta_seen"] = np.array(draw(st.lists(st.integers(0, 2**40))), dtype=np.int64)
    return arrays


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(score_arrays())
def test_any_stored_scores_come_back_bit_for_bit(arrays: dict[str, np.ndarray]) -> None:
    blob = encode_score_arrays(arrays)
    assert is_compact_scores(blob)
    _assert_same(decode_score_arrays(blob), arrays)


@settings(max_examples=100, deadline=None)
@given(score_arrays())
def test_the_legacy_form_round_trips_too(arrays: dict[str, np.ndarray]) -> None:
    """What 0025's downgrade writes reads back the same, and converts back to compact."""
    old = legacy_score_blob(arrays)
    assert old.startswith(b"PK") and not is_compact_scores(old)
    _assert_same(decode_score_arrays(old), arrays)
    _assert_same(decode_score_arrays(encode_score_arrays(decode_score_arrays(old))), arrays)


def test_an_npz_as_releases_before_wrote_it_still_reads() -> None:
    """The layout ScoreState.to_bytes wrote until now: meta_* members, then one 2-D array per
    dtype with its names (names_<n>, values_<n>)."""
    ndcg = np.array([0.5, np.nan, -0.0])
    counts = np.array([[3, 0, 1], [7, 1, 2]])
    out = io.BytesIO()
    np.savez(
        out,
        meta_query_ids=np.array([4, 5, 9]),
        meta_missing=np.array([False, True, False]),
        names_0=np.array(["ndcg_cut_10", "P_10"]),
        values_0=np.stack([ndcg, np.array([0.1, 0.0, 0.2])]),
        names_1=np.array(["num_rel", "num_ret"]),
        values_1=counts,
    )
    back = decode_score_arrays(out.getvalue())
    assert sorted(back) == ["P_10", "meta_missing", "meta_query_ids", "ndcg_cut_10", "num_rel",
                            "num_ret"]  # fmt: skip
    assert _bits(back["ndcg_cut_10"]) == _bits(ndcg)
    assert back["num_ret"].tolist() == [7, 1, 2] and back["meta_query_ids"].tolist() == [4, 5, 9]
    back["ndcg_cut_10"][0] = 1.0  # writable


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="version"):
        decode_score_arrays(b"\xffS\x02" + zlib.compress(b"{}"))


def test_scores_shaped_as_scoring_makes_them_take_a_fraction_of_the_npz() -> None:
    """7,000 queries, 8 judged chunks each (grades 0-3), relevant ranks spread over 1,000:
    DCG and IDCG at each cutoff computed here (numpy, independently of scoring), nDCG their
    ratio, P and Judged counts over k, recall over num_rel."""
    rng = np.random.default_rng(3)
    n, cutoffs = 7000, (1, 3, 5, 10, 20, 100, 1000)
    grades = rng.integers(0, 4, size=(n, 8)).astype(np.float64)
    ranks = np.sort(rng.choice(1000, size=(n, 8), replace=True), axis=1) + 1
    discount = 1 / np.log2(ranks + 1)
    ideal = -np.sort(-grades, axis=1) / np.log2(np.arange(2, 10))
    arrays: dict[str, np.ndarray] = {"num_rel": (grades >= 1).sum(axis=1)}
    for k in cutoffs:
        inside = ranks <= k
        dcg = (grades * discount * inside).sum(axis=1)
        idcg = np.cumsum(ideal, axis=1)[:, min(k, 8) - 1]
        arrays[f"dcg_cut_{k}"], arrays[f"idcg_cut_{k}"] = dcg, idcg
        with np.errstate(all="ignore"):
            arrays[f"ndcg_cut_{k}"] = np.where(idcg > 0, dcg / idcg, np.nan)
            relevant = ((grades >= 1) & inside).sum(axis=1)
            arrays[f"P_{k}"] = relevant / k
            arrays[f"judged_at_{k}"] = inside.sum(axis=1) / k
            nr = arrays["num_rel"]
            arrays[f"recall_{k}"] = np.where(nr > 0, relevant / np.maximum(nr, 1), np.nan)
    out = io.BytesIO()
    np.savez(out, **arrays)
    blob = encode_score_arrays(arrays)
    _assert_same(decode_score_arrays(blob), arrays)
    # nDCG, P, recall and Judged (4 of 6 float measures) need ~nothing; DCG and IDCG remain.
    assert len(blob) < len(out.getvalue()) / 4
