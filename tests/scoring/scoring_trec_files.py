"""Test-local readers of trec_eval's qrels, runs and outputs (the app's parsers live elsewhere)."""

from __future__ import annotations

from pathlib import Path

from ndcg_labeler.scoring import Qrel, ScoredDoc


def _content_lines(path: Path) -> list[list[str]]:
    """Whitespace-split fields of each line, skipping blank lines and `#` comment lines.

    A comment line is one whose first non-blank character is `#` (trec_eval's rule); a `#`
    inside a field, as in MS MARCO segment ids (msmarco_v2.1_doc_00_880019750#4_1633802806),
    is part of the docid and must be kept.
    """
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            rows.append(fields)
    return rows


def read_qrels(path: Path) -> list[Qrel]:
    """`qid iter docid grade` lines."""
    rows = _content_lines(path)
    assert all(len(fields) == 4 for fields in rows), f"malformed qrels line in {path}"
    return [Qrel(f[0], f[2], int(f[3])) for f in rows]


def read_run(path: Path) -> list[ScoredDoc]:
    """`qid Q0 docid rank score tag [ignored...]` lines; the rank column is ignored."""
    rows = _content_lines(path)
    assert all(len(fields) >= 6 for fields in rows), f"malformed run line in {path}"
    return [ScoredDoc(f[0], f[2], float(f[4])) for f in rows]


def read_expected(path: Path) -> dict[tuple[str, str], str]:
    """trec_eval output `measure qid value` as {(measure, qid): printed value}."""
    expected = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        measure, qid, value = line.split()
        expected[(measure, qid)] = value
    return expected
