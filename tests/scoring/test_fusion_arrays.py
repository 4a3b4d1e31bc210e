"""fuse_arrays (every query at once) against fuse (one query, plain Python): the same docids, in
the same order, with bit-identical scores, on seeded random runs full of the hard cases."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ndcg_labeler.formats.run_dedup import string_hashes
from ndcg_labeler.scoring.fusion import FUSION_METHODS, fuse, fuse_arrays

# Prefixes of each other, case, digits vs letters, non-ASCII (2-, 3- and 4-byte UTF-8).
VOCABULARY = ["a", "ab", "abc", "b", "B", "a0", "0", "é", "éa", "e", "日本", "日", "𝔘", "z~"]
# Few distinct scores (ties), negatives, signed zeros, big and tiny magnitudes.
SCORES = [3.0, 3.0, 2.5, 1.0, 0.0, -0.0, -1.5, 1e-7, 0.1, 0.2, 0.30000000000000004, 1e12]


def _random_runs(rng: np.random.Generator) -> list[dict[str, list[tuple[str, float]]]]:
    """2-4 runs over up to 6 queries; a run may miss a query or hold an empty list for it."""
    runs = []
    for _ in range(int(rng.integers(2, 5))):
        lists = {}
        for qid in ("q1", "q2", "q10", "q3", "qé", "q"):
            if rng.random() < 0.25:
                continue  # this run did not retrieve anything for the query
            size = int(rng.integers(0, len(VOCABULARY) + 1))
            docids = rng.choice(VOCABULARY, size=size, replace=False).tolist()
            if rng.random() < 0.5:
                scores = sorted(rng.choice(SCORES, size=size).tolist(), reverse=True)
            else:  # continuous scores: min-max normalisation with inexact divisions
                scores = sorted((rng.random(size) * 10 - 3).tolist(), reverse=True)
            lists[qid] = list(zip(docids, scores, strict=True))
        runs.append(lists)
    return runs


def _as_arrays(
    runs: list[dict[str, list[tuple[str, float]]]], qids: list[str], rng: np.random.Generator
) -> list:
    """Each run as (query index, docid, score) arrays, its queries in a shuffled order."""
    out = []
    for lists in runs:
        query, docids, scores = [], [], []
        for qid in rng.permutation(list(lists)).tolist():
            for docid, score in lists[qid]:
                query.append(qids.index(qid))
                docids.append(docid)
                scores.append(score)
        out.append((np.array(query, dtype=np.int64), np.array(docids, dtype=object), scores))
    return out


def _bits(score: float) -> bytes:
    return struct.pack("<d", score)


def _check_case(seed: int, method: str, k: int) -> None:
    rng = np.random.default_rng(seed)
    runs = _random_runs(rng)
    qids = sorted({qid for lists in runs for qid in lists})
    query, docids, scores, hashes = fuse_arrays(_as_arrays(runs, qids, rng), method, k)
    got = list(zip(query.tolist(), docids.to_pylist(), map(_bits, scores.tolist()), strict=True))
    expected = []
    for i, qid in enumerate(qids):
        fused = fuse([lists.get(qid, []) for lists in runs], method, k)
        expected += [(i, docid, _bits(score)) for docid, score in fused]
    assert got == expected, f"seed {seed}, {method}, k={k}"
    # The docids' hashes come along for the scoring cache: they must be the parser's.
    if hashes is not None:
        assert hashes.tolist() == string_hashes(docids).tolist()


@pytest.mark.parametrize("method", FUSION_METHODS)
@pytest.mark.parametrize("k", [0, 1, 60])
def test_the_array_fusion_equals_the_per_query_fusion_bit_for_bit(method: str, k: int) -> None:
    for seed in range(150):
        _check_case(seed, method, k)


def test_scores_are_summed_from_zero_in_run_order() -> None:
    """1/61 + 1/61 + 1/62 is not 1/62 + 1/61 + 1/61 in floating point: run order decides."""
    first, third = 1 / 61, 1 / 62
    in_order = ((0.0 + first) + first) + third
    assert in_order != ((0.0 + third) + first) + first
    runs = [[("d", 0.0)], [("d", 0.0)], [("x", 1.0), ("d", 0.0)]]
    arrays = [
        (np.zeros(len(r), np.int64), np.array([d for d, _ in r], object), [s for _, s in r])
        for r in runs
    ]
    _, docids, scores, _ = fuse_arrays(arrays, "rrf", 60)
    assert dict(zip(docids.to_pylist(), scores.tolist(), strict=True))["d"] == in_order
    assert dict(fuse([list(r) for r in runs], "rrf", 60))["d"] == in_order


def test_ties_go_to_the_greater_docid_in_byte_order() -> None:
    lists = [[("a", 5.0), ("ab", 5.0), ("é", 5.0), ("z", 5.0)], [("b", 1.0)]]
    arrays = [
        (np.zeros(len(r), np.int64), np.array([d for d, _ in r], object), [s for _, s in r])
        for r in lists
    ]
    _, docids, _, _ = fuse_arrays(arrays, "combsum")
    # All five normalise to 1.0: "é" (0xC3 0xA9) > "z" > "b" > "ab" > "a" as bytes.
    assert docids.to_pylist() == ["é", "z", "b", "ab", "a"]


def test_bad_input_is_refused() -> None:
    one = (np.array([0]), np.array(["d"], object), [1.0])
    with pytest.raises(ValueError, match="fusion method"):
        fuse_arrays([one, one], "borda")
    with pytest.raises(ValueError, match="at least 0"):
        fuse_arrays([one, one], "rrf", -1)
    split = (np.array([0, 1, 0]), np.array(["a", "b", "c"], object), [3.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="contiguous"):
        fuse_arrays([split, one])


def test_docids_whose_hashes_collide_are_still_told_apart(monkeypatch) -> None:
    """Every docid hashing alike sends fuse_arrays to its exact dictionary encoding."""
    import ndcg_labeler.formats.run_dedup as run_dedup

    monkeypatch.setattr(
        run_dedup, "string_hashes", lambda array: np.zeros(len(array), dtype=np.uint64)
    )
    for seed in range(40):
        for method in FUSION_METHODS:
            _check_case(seed, method, 60)
