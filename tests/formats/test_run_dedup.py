"""The fast path's duplicate check: exact whatever the hashes do, across batches and queries."""

import numpy as np
import pyarrow as pa
import pytest

from ndcg_labeler.formats import run_arrow, run_dedup, runs
from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.formats.run_dedup import has_duplicates, none_in_groups, string_hashes
from ndcg_labeler.formats.runs import read_run

from .util import upload

LONG = "msmarco_v2.1_doc_{}#middle_part_{}_same_suffix"


def test_equal_strings_hash_equal_wherever_they_sit_in_the_buffers():
    names = ["a", "abcdefgh", "abcdefghi", "é" * 20, "x" * 17, "x" * 16 + "y"]
    whole = pa.array(names * 2)
    hashes = string_hashes(whole)
    assert hashes[: len(names)].tolist() == hashes[len(names) :].tolist()
    shifted = string_hashes(whole.slice(3, 6).cast(pa.large_string()))
    assert shifted.tolist() == hashes[3:9].tolist()
    assert len(set(hashes[: len(names)].tolist())) == len(names)


def test_duplicates_are_counted_within_a_query_only():
    docids = pa.array(["d1", "d2", "d1", "d2"])
    hashes = string_hashes(docids)
    assert not has_duplicates(np.array([0, 0, 1, 1]), hashes, docids)
    assert has_duplicates(np.array([0, 0, 1, 0]), hashes, docids)


def test_colliding_hashes_are_settled_by_the_strings():
    docids = pa.array(["a", "b", "c", "a"])
    zeros = np.zeros(4, dtype=np.uint64)
    assert not has_duplicates(np.array([0, 0, 0, 1]), zeros, docids)
    assert has_duplicates(np.array([0, 0, 0, 0]), zeros, docids)


def test_long_docids_differing_only_in_the_middle_are_distinct(monkeypatch):
    monkeypatch.setattr(runs, "collect_whitespace", pytest.fail)  # must stay on the fast path
    text = "".join(f"q Q0 {LONG.format(7, i)} {i} {i} t\n" for i in range(200))
    run = read_run(upload(text), "x")
    assert run.offsets.tolist() == [0, 200]


@pytest.mark.parametrize("block", [4 << 20, 64])
def test_a_duplicate_in_an_interleaved_query_is_the_line_parsers_error(monkeypatch, block):
    monkeypatch.setattr(run_arrow, "_BLOCK", block)
    text = f"a Q0 {LONG.format(1, 1)} 1 2 t\nb Q0 x 1 1 t\na Q0 {LONG.format(1, 1)} 2 1 t\n"
    with pytest.raises(FormatError, match=r"^x:3: docid '.*' appears twice for query a"):
        read_run(upload(text), "x")


def test_forced_hash_collisions_change_nothing(monkeypatch):
    monkeypatch.setattr(
        run_arrow, "string_hashes", lambda docids: np.zeros(len(docids), dtype=np.uint64)
    )
    run = read_run(upload("q Q0 a 1 2 t\nq Q0 b 2 1 t\nr Q0 a 1 1 t\n"), "x")
    assert run.docids.tolist() == ["a", "b", "a"]
    with pytest.raises(FormatError, match="docid 'b' appears twice for query q"):
        read_run(upload("q Q0 a 1 2 t\nq Q0 b 2 1 t\nq Q0 b 3 0 t\n"), "x")


@pytest.mark.parametrize("width", [1, 7, 8, 9, 16, 17, 23])
def test_fixed_width_batches_hash_like_mixed_ones(width):
    names = [("ab" * 20)[: width - 1] + chr(97 + i % 26) for i in range(60)]
    fixed = string_hashes(pa.array(names))
    mixed = string_hashes(pa.array([*names, "x"]))[:60]
    assert fixed.tolist() == mixed.tolist()
    assert string_hashes(pa.array(names).slice(7, 20)).tolist() == fixed[7:27].tolist()


def _oracle(lengths: list[int], names: list[str]) -> bool:
    """A docid twice within one group, by Python sets."""
    start = 0
    for n in lengths:
        group = names[start : start + n]
        if len(set(group)) != len(group):
            return True
        start += n
    return False


@pytest.mark.parametrize("seed", range(60))
def test_the_per_query_check_agrees_with_sets(seed, monkeypatch):
    """Grouped (the usual file, each query's lines together) or not, the same exact answer:
    ragged or equal lengths (the padded table, its fallback, or no padding), empty groups,
    forced collisions, a hash equal to the padding value, and groups checked a few rows at
    a time."""
    if seed % 2:
        monkeypatch.setattr(run_dedup, "_BLOCK", 24)  # a handful of rows per step
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 12 if seed % 3 else 200, size=int(rng.integers(1, 30))).tolist()
    if seed % 5 == 0:
        lengths[0] = 400  # far above the others: padding would cost too much
    elif seed % 5 == 3:
        lengths = [max(lengths[0], 2)] * len(lengths)  # every query as long: no padding at all
    vocabulary = int(rng.integers(2, 60))
    names = [f"d{int(v)}" for v in rng.integers(0, vocabulary, size=sum(lengths))]
    if seed % 10 == 8:  # no docid twice in a query (its names drawn without repeats)
        names = [f"d{int(v)}" for n in lengths for v in rng.permutation(vocabulary + n)[:n]]
    docids = pa.array(names)
    hashes = string_hashes(docids)
    if seed % 4 == 1:
        hashes = hashes % np.uint64(3)  # most hashes collide: the strings must settle it
    if seed % 7 == 2 and hashes.size:
        hashes[0] = np.uint64((1 << 64) - 1)
    codes = np.repeat(np.arange(len(lengths)), lengths)
    expected = _oracle(lengths, names)
    if none_in_groups(np.array(lengths, dtype=np.int64), hashes):
        assert not expected
    elif seed % 4 != 1 and hashes.max(initial=0) != (1 << 64) - 1 and max(lengths) < 400:
        assert expected  # real hashes, no padding value, padding cheap: only a repeat says no
    assert has_duplicates(codes, hashes, docids) == expected
