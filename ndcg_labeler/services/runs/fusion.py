"""Fused runs: RRF, CombSUM or CombMNZ over two or more runs, stored like any upload.

The input runs' ranked lists are read from their RunQuery rows (already in trec_eval order),
fused per query by scoring.fusion, written out as a TREC run in memory and stored through the
one upload path (upload_run): the same validation, ranking, depth cut, versions and cache.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Query, Run, RunQuery, TestSet, User
from ndcg_labeler.scoring.fusion import METHODS, RRF_K, fuse
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services._progress import Progress, no_progress

from .upload import MAX_DEPTH, upload_run

MAX_RRF_K = 1_000_000
_EVERY_QUERIES = 200


def ranked_lists(run: Run) -> dict[str, list[tuple[str, float]]]:
    """qid -> the run's (docid, score) list in rank order."""
    rows = db.session.execute(
        sa.select(Query.qid, RunQuery.docids, RunQuery.scores)
        .join(Query, Query.id == RunQuery.query_id)
        .where(RunQuery.run_id == run.id)
    )
    lists: dict[str, list[tuple[str, float]]] = {}
    for qid, blob, score_bytes in rows:
        docids = bytes(blob).decode().split("\n") if blob else []
        scores = np.frombuffer(bytes(score_bytes), dtype=np.float64).tolist()
        lists[qid] = list(zip(docids, scores, strict=True))
    return lists


def check_fusion(test_set: TestSet, runs: Sequence[Run], method: str, k: int) -> None:
    """Refuse an unknown method, fewer than two or repeated runs, a foreign run or a bad k."""
    if method not in METHODS:
        raise ServiceError(f"the fusion method must be one of {', '.join(METHODS)}, not '{method}'")
    if len(runs) < 2:
        raise ServiceError("fusing needs at least two runs")
    if len({run.id for run in runs}) != len(runs):
        raise ServiceError("choose different runs to fuse")
    for run in runs:
        if run.test_set_id != test_set.id:
            raise ServiceError(f"run '{run.name}' is not a run of test set '{test_set.name}'")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_RRF_K:
        raise ServiceError(f"the RRF constant k must be a whole number from 0 to {MAX_RRF_K}")


def describe(runs: Sequence[Run], method: str, k: int = RRF_K) -> str:
    """How a fused run was made, kept as its notes."""
    how = f"reciprocal rank fusion (k={k})" if method == "rrf" else method
    how = {"combsum": "CombSUM", "combmnz": "CombMNZ"}.get(method, how)
    if method != "rrf":
        how += " on min-max normalised scores"
    return f"Fused with {how} from: " + ", ".join(run.name for run in runs)


def fuse_runs(
    test_set: TestSet,
    runs: Sequence[Run],
    name: str,
    created_by: User | None,
    method: str = "rrf",
    k: int = RRF_K,
    depth: int | None = None,
    progress: Progress = no_progress,
) -> Run:
    """Create run `name` fusing `runs` per query with `method`; stored like an upload.

    `progress` hears ("fuse", queries done, queries, entries written), then the upload's own
    reports; when it raises (Cancelled), nothing is stored."""
    check_fusion(test_set, runs, method, k)
    if depth is None:
        depth = min(MAX_DEPTH, max(run.depth for run in runs))
    per_run = [ranked_lists(run) for run in runs]
    qids = sorted({qid for lists in per_run for qid in lists})
    out = io.StringIO()
    entries = 0
    for done, qid in enumerate(qids):
        if done % _EVERY_QUERIES == 0:
            progress("fuse", done, len(qids), entries)
        fused = fuse([lists.get(qid, []) for lists in per_run], method, k)
        for rank, (docid, score) in enumerate(fused, start=1):
            out.write(f"{qid} Q0 {docid} {rank} {score!r} fused\n")
        entries += len(fused)
    progress("fuse", len(qids), len(qids), entries)
    data = out.getvalue().encode()
    if not data:
        raise ServiceError("the runs to fuse have no ranked entries")
    return upload_run(
        test_set,
        io.BytesIO(data),
        f"fused-{method}.trec",
        name,
        created_by,
        depth=depth,
        notes=describe(runs, method, k),
        progress=progress,
    )
