"""The audit events of an import: one per file given, with what it held and what it changed."""

from __future__ import annotations

import os

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet, User
from ndcg_labeler.services import audit
from ndcg_labeler.services.imports.write import Counts


def _counts(counts: Counts | None) -> dict[str, int]:
    """rows (records of the kind written), created, updated, unchanged."""
    counts = counts or Counts()
    rows = counts.created + counts.updated + counts.unchanged
    return {
        "rows": rows,
        "created": counts.created,
        "updated": counts.updated,
        "unchanged": counts.unchanged,
    }


def record_import(
    test_set: TestSet,
    actor_id: int | None,
    files: dict[str, tuple[str, Counts | None]],
    source: str | None = None,
    left_out: int = 0,
) -> None:
    """Add an "import.KIND" event per file to the session (the import's own transaction).

    `files`: kind (queries, corpus, pool, qrels) -> (file name, its records' counts);
    `actor_id` None is the command line. `left_out`: corpus chunks no pool, qrels or run named.
    """
    actor = db.session.get(User, actor_id) if actor_id is not None else None
    for kind, (filename, counts) in files.items():
        details: dict[str, object] = {
            "test_set": test_set.name,
            "file": os.path.basename(filename),
        }
        if kind == "qrels":
            details["source"] = source
        details.update(_counts(counts))
        if kind == "corpus" and left_out:
            details["left_out"] = left_out
        audit.record(actor, f"import.{kind}", "test_set", test_set.id, **details)
