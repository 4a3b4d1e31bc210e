"""Write TREC qrels and runs that trec_eval (and our readers) read back unchanged."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from .fields import ASCII_WS
from .records import QrelRecord

if TYPE_CHECKING:
    from .runs import ParsedRun


def _token(value: str, what: str) -> str:
    if not value or any(ch in value for ch in ASCII_WS):
        raise ValueError(f"{what} {value!r} cannot be written to a TREC file (empty or whitespace)")
    return value


def write_trec_qrels(records: Iterable[QrelRecord], out: TextIO) -> int:
    """Write `qid 0 docid grade` lines in the given order; return how many were written."""
    count = 0
    for qid, docid, grade in records:
        out.write(f"{_token(qid, 'qid')} 0 {_token(docid, 'docid')} {int(grade)}\n")
        count += 1
    return count


def write_trec_run(run: ParsedRun, out: TextIO, *, tag: str = "ndcg-labeler") -> int:
    """Write `qid Q0 docid rank score tag`, each query ranked as trec_eval ranks it."""
    tag = _token(tag, "tag")
    count = 0
    for qid, docids, scores in run.items():
        _token(qid, "qid")
        pairs = sorted(zip(docids.tolist(), scores.tolist(), strict=True), reverse=True)
        pairs.sort(key=lambda pair: pair[1], reverse=True)  # stable: ties stay docid-descending
        for rank, (docid, score) in enumerate(pairs, 1):
            out.write(f"{qid} Q0 {_token(docid, 'docid')} {rank} {score!r} {tag}\n")
        count += len(pairs)
    return count
