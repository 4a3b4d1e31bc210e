"""The run fast path refuses at the block holding the first bad row (issue 28, bounded uploads):
a docid twice past its first blocks, in a query listed together, one that comes back later, or
one longer than many blocks, and a query the caller refuses; with the line the line parser
names, and without reading the rest of the file."""

from __future__ import annotations

import gzip
import io

import numpy as np
import pytest

from ndcg_labeler.formats import run_arrow
from ndcg_labeler.formats.errors import FormatError
from ndcg_labeler.formats.runs import read_run


class Furthest(io.BytesIO):
    """A stream that remembers the furthest byte read from it (fast path and re-read alike)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.furthest = 0

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def, override]
        n = super().readinto(b)
        self.furthest = max(self.furthest, self.tell())
        return n

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.furthest = max(self.furthest, self.tell())
        return data


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 64 KB from the start: what was the check while blocks grew is one block, and
    a few MB stand for the hundreds a real file has past its first 8 MB."""
    monkeypatch.setattr(run_arrow, "_FIRST_BLOCK", 64 * 1024)
    monkeypatch.setattr(run_arrow, "_BLOCK", 64 * 1024)


def _line(qid: str, docid: str, rank: int) -> str:
    return f"{qid} Q0 {docid} {rank} {1000 - rank % 1000}.5 tag\n"


def _grouped(queries: int, depth: int) -> list[str]:
    """A run as files list it: each query's `depth` lines together."""
    return [_line(f"q{q}", f"doc{q}-{r}", r + 1) for q in range(queries) for r in range(depth)]


def _refusal(lines: list[str], gz: bool = False) -> tuple[str, float]:
    """The error read_run raises (fast path on) and how much of the file it read."""
    data = "".join(lines).encode()
    stream = Furthest(gzip.compress(data, 1) if gz else data)
    with pytest.raises(FormatError) as info:
        read_run(stream, "run.trec")
    return str(info.value), stream.furthest / len(stream.getvalue())


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_a_repeat_far_into_a_grouped_run_is_refused_at_its_block(small_blocks, gz):
    lines = _grouped(600, 500)  # 300,000 lines, ~9 MB (the reader buffers 2 MB ahead)
    at = 40_100  # ~1.2 MB in: past the first blocks
    lines.insert(at, lines[at - 3])  # q80's doc80-97 again
    message, read = _refusal(lines, gz)
    assert message == (
        f"run.trec:{at + 1}: docid 'doc80-97' appears twice for query q80 (first at line {at - 2})"
    )
    assert read < 0.5


def test_blank_lines_before_a_repeat_count_in_its_line_number(small_blocks):
    lines = _grouped(600, 500)
    lines[10:10] = ["\n", "\r\n", "\n"]  # three blank lines: the fast path has no row for them
    at = 40_103
    lines.insert(at, lines[at - 1])  # q80's doc80-99 twice in a row
    message, read = _refusal(lines)
    assert message == (
        f"run.trec:{at + 1}: docid 'doc80-99' appears twice for query q80 (first at line {at})"
    )
    assert read < 0.5


def test_a_repeat_in_a_query_that_comes_back_is_refused_at_its_block(small_blocks):
    lines = _grouped(600, 500)
    back = [_line("q7", f"again{r}", r) for r in range(1, 2000)]  # q7 again, much later
    back[1500] = _line("q7", "doc7-123", 9999)  # q7 had it at line 7 * 500 + 124
    lines[40_000:40_000] = back
    message, read = _refusal(lines)
    assert message == (
        f"run.trec:{40_000 + 1501}: docid 'doc7-123' appears twice for query q7 "
        f"(first at line {7 * 500 + 124})"
    )
    assert read < 0.5


def test_a_repeat_in_a_query_longer_than_many_blocks_is_refused_at_its_block(small_blocks):
    lines = [_line("q1", f"d{r}", r + 1) for r in range(300_000)]  # one query, ~7 MB
    lines.insert(40_000, _line("q1", "d17", 1))
    message, read = _refusal(lines)
    assert message == ("run.trec:40001: docid 'd17' appears twice for query q1 (first at line 18)")
    assert read < 0.5


def test_a_refused_query_far_in_is_refused_at_its_line(small_blocks):
    lines = _grouped(600, 500)
    lines.insert(40_000, _line("q-unknown", "d1", 1))
    data = "".join(lines).encode()
    for fast in (True, False):
        stream = Furthest(data)
        with pytest.raises(FormatError) as info:
            read_run(stream, "run.trec", fast=fast, qid_check=_only_q)
        assert str(info.value) == "run.trec:40001: no query 'q-unknown' here"
        assert stream.furthest < len(data) / 2


def _only_q(qid: str) -> str | None:
    return None if qid[1:].isdigit() else f"no query '{qid}' here"


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "line parser"])
def test_the_first_of_a_repeat_and_a_refused_query_is_the_error(fast):
    repeat_first = "q1 Q0 a 1 2 t\nq1 Q0 a 2 1 t\nzz Q0 b 1 1 t\n"
    unknown_first = "q1 Q0 a 1 2 t\nzz Q0 b 1 1 t\nq1 Q0 a 2 1 t\n"
    with pytest.raises(FormatError, match=r"^x:2: docid 'a' appears twice for query q1"):
        read_run(io.BytesIO(repeat_first.encode()), "x", fast=fast, qid_check=_only_q)
    with pytest.raises(FormatError, match=r"^x:2: no query 'zz' here$"):
        read_run(io.BytesIO(unknown_first.encode()), "x", fast=fast, qid_check=_only_q)


def _outcome(data: bytes, fast: bool) -> object:
    try:
        run = read_run(io.BytesIO(data), "x", fast=fast, qid_check=_only_q)
    except FormatError as exc:
        return str(exc)
    return (run.lines, run.qids, run.offsets.tolist(), run.docids.tolist(), run.scores.tolist())


def _random_run(rng: np.random.Generator) -> bytes:
    """Queries listed together or coming back, long or short, blank lines, maybe a repeat or a
    refused query somewhere."""
    lines: list[str] = []
    queries = int(rng.integers(1, 8))
    for _ in range(int(rng.integers(1, 12))):  # stretches of one query each
        q = int(rng.integers(0, queries))
        for _ in range(int(rng.integers(1, 40))):
            doc = int(rng.integers(0, 10_000 if rng.random() < 0.98 else 30))
            lines.append(_line(f"q{q}", f"d{doc}", len(lines) + 1))
        if rng.random() < 0.1:
            lines.append(rng.choice(["\n", "\r\n"]))
    if rng.random() < 0.1:
        lines.insert(int(rng.integers(0, len(lines))), _line("zz", "d1", 1))
    return "".join(lines).encode()


@pytest.mark.parametrize("seed", range(40))
def test_the_block_checks_agree_with_the_line_parser(seed, monkeypatch):
    """Blocks of a few lines (every seam, the sorted keys, the queries coming back), with real
    hashes and, for some seeds, hashes that all collide (the strings must decide)."""
    monkeypatch.setattr(run_arrow, "_FIRST_BLOCK", 256)
    monkeypatch.setattr(run_arrow, "_BLOCK", 64 if seed % 2 else 512)
    if seed % 5 == 4:
        monkeypatch.setattr(
            run_arrow, "string_hashes", lambda docids: np.zeros(len(docids), dtype=np.uint64)
        )
    rng = np.random.default_rng(seed)
    for _ in range(10):
        data = _random_run(rng)
        assert _outcome(data, fast=True) == _outcome(data, fast=False)
