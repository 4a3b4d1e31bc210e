"""Helpers for the test-set tests: fixture files, in-memory uploads and DB counts."""

from __future__ import annotations

import io
from pathlib import Path

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, Judgment, JudgmentEvent, Pair, Query, TestSet
from ndcg_labeler.services.imports import ImportFile

DATA = Path(__file__).resolve().parent.parent / "data"
BEIR = DATA / "beir_small"


def mem(name: str, text: str) -> ImportFile:
    """An in-memory file named `name` holding `text`."""
    return ImportFile(io.BytesIO(text.encode()), name)


def path(relative: str) -> ImportFile:
    """A fixture file under tests/data."""
    return ImportFile.from_path(DATA / relative)


def counts(test_set_id: int) -> dict[str, int]:
    """Rows per table of one test set (call inside an app context)."""

    def n(model: type) -> int:
        stmt = sa.select(sa.func.count()).select_from(model).where(model.test_set_id == test_set_id)
        return int(db.session.scalar(stmt) or 0)

    return {
        "queries": n(Query),
        "chunks": n(Chunk),
        "pairs": n(Pair),
        "judgments": n(Judgment),
        "events": n(JudgmentEvent),
        "labels_version": db.session.get(TestSet, test_set_id).labels_version,
    }
