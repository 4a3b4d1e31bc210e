"""trec_eval's ranking: score descending, ties by docid descending in byte order."""

from __future__ import annotations

import numpy as np
import pytest

from ndcg_labeler.scoring import docid_keys, rank_grouped, rank_order


def ranked(docids: list[str], scores: list[float]) -> list[str]:
    """The docids in rank order."""
    return [docids[i] for i in rank_order(docids, np.array(scores))]


def test_higher_score_ranks_first_whatever_the_input_order() -> None:
    assert ranked(["a", "b", "c"], [0.1, 0.9, 0.5]) == ["b", "c", "a"]


def test_ties_go_to_the_larger_docid_first() -> None:
    # trec_eval's comparator: strcmp(docno2, docno1) on equal scores -> descending docids.
    assert ranked(["d1", "d3", "d2"], [1.0, 1.0, 1.0]) == ["d3", "d2", "d1"]


def test_tie_break_is_byte_order_not_numeric_or_case_insensitive() -> None:
    # Byte order: "B" (0x42) < "a" (0x61); "doc10" < "doc9" because "1" < "9".
    assert ranked(["a", "B", "doc9", "doc10"], [0.0] * 4) == ["doc9", "doc10", "a", "B"]


def test_tie_break_on_non_ascii_follows_utf8_bytes() -> None:
    # "é" is U+00E9 (UTF-8 C3 A9) and "z" is 0x7A: bytes order z < é, so é ranks first.
    assert ranked(["z", "é", "e"], [2.0, 2.0, 2.0]) == ["é", "z", "e"]


def test_ties_only_reorder_within_equal_scores() -> None:
    docids = ["a", "b", "c", "d", "e"]
    scores = [0.5, 0.9, 0.5, 0.1, 0.5]
    assert ranked(docids, scores) == ["b", "e", "c", "a", "d"]


def test_negative_zero_ties_with_zero_and_infinities_rank_at_the_ends() -> None:
    docids = ["a", "b", "c", "d"]
    scores = [0.0, -0.0, float("inf"), -float("inf")]
    assert ranked(docids, scores) == ["c", "b", "a", "d"]


def test_docids_with_hash_marks_are_ordinary_bytes() -> None:
    docids = ["msmarco_v2.1_doc_00_1#4_9", "msmarco_v2.1_doc_00_1#10_9"]
    # "#4" vs "#1": "4" > "1" so the #4 segment ranks first on a tie.
    assert ranked(docids, [0.7, 0.7]) == docids


def test_scores_are_doubles_not_floats() -> None:
    # 1 + 1e-10 and 1.0 are equal in float32 but not in float64 (trec_eval 10 reads doubles).
    assert ranked(["a", "b"], [1.0, 1.0 + 1e-10]) == ["b", "a"]


def test_object_bytes_and_integer_key_docids_rank_alike() -> None:
    docids = ["x2", "x10", "x1", "y"]
    scores = np.array([1.0, 1.0, 3.0, 1.0])
    expected = rank_order(docids, scores).tolist()
    assert expected == [2, 3, 0, 1]  # x1 by score; then y > x2 > x10 by bytes
    assert rank_order(np.array(docids, dtype=object), scores).tolist() == expected
    assert rank_order(np.array(docids, dtype="S"), scores).tolist() == expected
    assert rank_order(docid_keys(docids), scores).tolist() == expected


def test_docid_keys_preserve_byte_order_and_equality() -> None:
    keys = docid_keys(["b", "a", "c", "a"])
    assert keys.tolist() == [1, 0, 2, 0]


def test_rank_grouped_sorts_each_group_and_returns_global_indices() -> None:
    docids = ["a", "b", "c", "x", "y", "p", "q", "r"]
    scores = np.array([0.1, 0.3, 0.2, 5.0, 5.0, 1.0, 1.0, 2.0])
    offsets = [0, 3, 3, 5, 8]  # groups: abc, (empty), xy, pqr
    perm = rank_grouped(offsets, docids, scores)
    assert [docids[i] for i in perm] == ["b", "c", "a", "y", "x", "r", "q", "p"]


def test_rank_grouped_matches_rank_order_on_many_random_groups() -> None:
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 40, size=300)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    n = int(offsets[-1])
    docids = np.array([f"d{v}" for v in rng.integers(0, 50, size=n)])
    scores = rng.integers(0, 5, size=n).astype(float)  # many ties
    perm = rank_grouped(offsets, docids, scores)
    for i in range(lengths.size):
        start, stop = offsets[i], offsets[i + 1]
        local = rank_order(docids[start:stop], scores[start:stop]) + start
        got = list(zip(scores[perm[start:stop]], docids[perm[start:stop]], strict=True))
        want = list(zip(scores[local], docids[local], strict=True))
        assert got == want
        assert got == sorted(got, reverse=True)  # score desc, then docid desc


def test_rank_grouped_spans_several_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    import ndcg_labeler.scoring.ranking as ranking
    from ndcg_labeler.scoring._ragged import row_blocks

    rng = np.random.default_rng(3)
    offsets = np.arange(0, 101, 10)
    docids = np.array([f"d{i % 7}{i}" for i in range(100)])
    scores = rng.integers(0, 3, size=100).astype(float)
    whole = rank_grouped(offsets, docids, scores)
    monkeypatch.setattr(ranking, "row_blocks", lambda lengths: row_blocks(lengths, budget=25))
    assert rank_grouped(offsets, docids, scores).tolist() == whole.tolist()


def test_empty_input_ranks_nothing() -> None:
    assert rank_order([], np.array([])).tolist() == []
    assert rank_grouped([0, 0, 0], [], np.array([])).tolist() == []


@pytest.mark.parametrize(
    ("offsets", "docids", "scores", "error"),
    [
        ([0, 2], ["a", "b"], [1.0, float("nan")], ValueError),
        ([0, 3], ["a", "b"], [1.0, 2.0], ValueError),
        ([1, 2], ["a", "b"], [1.0, 2.0], ValueError),
        ([0, 2, 1, 2], ["a", "b"], [1.0, 2.0], ValueError),
        ([0, 2], ["a"], [1.0, 2.0], ValueError),
        ([0, 2], [1.5, 2.5], [1.0, 2.0], TypeError),
    ],
)
def test_bad_input_is_rejected(
    offsets: list[int], docids: list, scores: list[float], error: type[Exception]
) -> None:
    with pytest.raises(error):
        rank_grouped(offsets, docids, np.array(scores))


def test_rank_grouped_takes_an_arrow_string_array_with_byte_order_ties() -> None:
    import pyarrow as pa

    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 30, size=200)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    names = ["a", "B", "b", "é", "z", "Z9", "\u00ff", "\u0100", "aa"]  # code point = byte order
    docids = [f"{names[v % len(names)]}{v}" for v in rng.integers(0, 400, size=int(offsets[-1]))]
    scores = rng.integers(0, 3, size=len(docids)).astype(float)
    expected = rank_grouped(offsets, np.array(docids, dtype=object), scores)
    arrow = pa.array(docids, type=pa.large_string())
    assert rank_grouped(offsets, arrow, scores).tolist() == expected.tolist()
    by_bytes = sorted(d.encode() for d in set(docids))
    assert by_bytes == sorted(d.encode() for d in sorted(set(docids)))


@pytest.mark.parametrize("arrow", [False, True], ids=["numpy", "arrow"])
def test_a_run_listed_best_first_ranks_as_trec_eval_ties_included(arrow: bool) -> None:
    """Most run files list each query best first; the ties within may be in any docid order
    (and -0.0 ties with 0.0). The ranking is trec_eval's all the same."""
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 50, size=400)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    docids, scores = [], []
    for length in lengths.tolist():
        values = rng.choice([3.0, 2.5, 1.0, 0.0, -0.0, -1.0], size=length)
        values = -np.sort(-values)  # never increasing within the query, ties in any order
        scores += values.tolist()
        docids += [f"d{v}" for v in rng.choice(10_000, size=length, replace=False).tolist()]
    keys = np.array(docids)
    if arrow:
        import pyarrow as pa

        keys = pa.array(docids, type=pa.large_string())
    perm = rank_grouped(offsets, keys, np.array(scores))
    for i in range(lengths.size):
        start, stop = int(offsets[i]), int(offsets[i + 1])
        want = sorted(zip(scores[start:stop], docids[start:stop], strict=True), reverse=True)
        got = [(scores[j], docids[j]) for j in perm[start:stop].tolist()]
        assert [d for _, d in got] == [d for _, d in want]
