"""The demo's two retriever runs (the tutorial's HR example), uploaded like any user's run."""

from __future__ import annotations

import io
import json

from ndcg_labeler.models import Run, TestSet, User
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.demo.testset import DEMO_RUNS


def demo_run_file(rankings: list[tuple[str, list[str]]]) -> io.BytesIO:
    """A run as JSON lines {"qid", "ranking": [docid, ...]} (best first)."""
    lines = [json.dumps({"qid": qid, "ranking": docids}) for qid, docids in rankings]
    return io.BytesIO(("\n".join(lines) + "\n").encode("utf-8"))


def load_demo_runs(test_set: TestSet, uploaded_by: User | None = None) -> list[Run]:
    """Upload every demo run the test set does not have yet, through the upload service."""
    created = []
    for name, rankings in DEMO_RUNS.items():
        if run_service.name_taken(test_set, name):
            continue
        filename = "demo/" + name.split(" (")[0].lower().replace(" ", "-") + ".jsonl"
        created.append(
            run_service.upload_run(
                test_set,
                demo_run_file(rankings),
                filename,
                name,
                uploaded_by,
                notes="Demo run: the reference tutorial's example rankings.",
            )
        )
    return created
