"""The live engine's grade join: the upload's hashed join equals the string join, exactly."""

import numpy as np
import pyarrow as pa
import pytest

from ndcg_labeler.formats.run_dedup import string_hashes
from ndcg_labeler.services.live import ranked
from ndcg_labeler.services.live.ranked import RunData

ROWS = [["d3", "d1", "é2", "x"], ["d1", "d9"], ["zz", "d3"]]
QUERY_IDS = [11, 12, 13]
# d1 is judged for query 11 and not 12; "é2" is non-ASCII; d7 is judged but not retrieved.
GRADES = {11: {"d1": 2, "é2": 3, "d7": 1}, 12: {"d9": 0}, 13: {"d3": 1}}
EXPECTED = [np.nan, 2, 3, np.nan, np.nan, 0, np.nan, 1]


def run_data(hashes=None, rows=ROWS, query_ids=QUERY_IDS):
    """RunData as an upload hands it over (buffer + hashes) or, without hashes, as read back."""
    flat = [d for row in rows for d in row]
    data = "".join(d + "\n" for d in flat).encode()
    lengths = [len(d.encode()) + 1 for d in flat]
    tok_off = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    row_off = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
    if hashes is None:
        hashes = string_hashes(pa.array(flat, type=pa.large_string()))
    key = (1, "sha", "now", 10, len(flat))
    return RunData.from_buffer(key, query_ids, "r", data, tok_off, row_off, hashes)


def blobs_data():
    return RunData((1, "sha", "now", 10, 8), QUERY_IDS, ["\n".join(r).encode() for r in ROWS], "r")


def refuse_string_join(monkeypatch):
    """Make the string join (index_in over every token) fail: the hashed join must serve."""

    def refuse(*args, **kwargs):
        raise AssertionError("string join used")

    monkeypatch.setattr("pyarrow.compute.index_in", refuse)


def test_hashed_join_matches_the_string_join_and_hand_expectation(monkeypatch):
    with monkeypatch.context() as patch:
        refuse_string_join(patch)
        hashed = run_data().all_ranked_grades(GRADES)
    from_db = blobs_data()
    assert from_db.hashes is None
    np.testing.assert_array_equal(hashed, EXPECTED)
    np.testing.assert_array_equal(from_db.all_ranked_grades(GRADES), EXPECTED)


def test_an_entry_whose_hash_collides_with_a_judged_docid_stays_unjudged(monkeypatch):
    refuse_string_join(monkeypatch)
    hashes = string_hashes(pa.array([d for row in ROWS for d in row], type=pa.large_string()))
    hashes[0] = string_hashes(pa.array(["d1"]))[0]  # "d3" of query 11 now looks like "d1"
    np.testing.assert_array_equal(run_data(hashes).all_ranked_grades(GRADES), EXPECTED)


def test_judged_docids_sharing_a_key_fall_back_to_the_string_join(monkeypatch):
    monkeypatch.setattr(
        "ndcg_labeler.services.live.ranked.string_hashes",
        lambda array: np.zeros(len(array), dtype=np.uint64),
    )
    np.testing.assert_array_equal(run_data().all_ranked_grades(GRADES), EXPECTED)


@pytest.mark.parametrize("block", [1, 3, 5])
def test_the_hashed_join_a_few_entries_at_a_time_with_an_empty_row(monkeypatch, block):
    """Blocks that cut rows anywhere, and a query without entries (judged d1, nothing
    retrieved): the same grades as by hand."""
    refuse_string_join(monkeypatch)
    monkeypatch.setattr(ranked, "_BLOCK", block)
    rows = [ROWS[0], [], *ROWS[1:]]
    grades = {**GRADES, 14: {"d1": 1}}
    data = run_data(rows=rows, query_ids=[11, 14, 12, 13])
    np.testing.assert_array_equal(data.all_ranked_grades(grades), EXPECTED)
