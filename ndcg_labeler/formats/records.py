"""Plain typed records the parsers yield; shared with services and scoring."""

from __future__ import annotations

from typing import Any, NamedTuple


class QueryRecord(NamedTuple):
    """One test query: external id, text and optional narrative (assessor instructions)."""

    qid: str
    text: str
    narrative: str | None = None


class ChunkRecord(NamedTuple):
    """One chunk (document or passage) to be judged."""

    docid: str
    title: str | None
    text: str
    metadata: dict[str, Any]


class PairRecord(NamedTuple):
    """One query–chunk pair of a judging pool."""

    qid: str
    docid: str


class QrelRecord(NamedTuple):
    """One relevance judgment; grades ≤ 0 are judged non-relevant, as in trec_eval."""

    qid: str
    docid: str
    grade: int
