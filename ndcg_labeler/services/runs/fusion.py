"""Fused runs: RRF, CombSUM or CombMNZ over two or more runs, stored like any upload.

The input runs' ranked lists are read from their RunQuery rows (already in trec_eval order)
as arrays, fused for all queries at once by scoring.fusion.fuse_arrays and stored through the
upload path after its parser (upload.store_parsed_run): the same checks, ranking, depth cut,
report, versions and cache. The run's sha256 is that of the TREC file a line-by-line writer
would make of it (built with pyarrow string kernels and hashed, never parsed back).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import decode_ranked
from ndcg_labeler.models import Query, Run, RunQuery, TestSet, User
from ndcg_labeler.scoring import FUSION_METHODS, RRF_K, fuse_arrays
from ndcg_labeler.services import ServiceError
from ndcg_labeler.services._progress import Progress, no_progress

from .upload import MAX_DEPTH, store_parsed_run

if TYPE_CHECKING:
    import pyarrow as pa

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
    for qid, blob, score_blob in rows:
        text, values = decode_ranked(blob, score_blob)
        docids = text.decode().split("\n") if text else []
        scores = values.tolist()
        lists[qid] = list(zip(docids, scores, strict=True))
    return lists


def check_fusion(test_set: TestSet, runs: Sequence[Run], method: str, k: int) -> None:
    """Refuse an unknown method, fewer than two or repeated runs, a foreign or archived run
    or a bad k."""
    if method not in FUSION_METHODS:
        raise ServiceError(
            f"the fusion method must be one of {', '.join(FUSION_METHODS)}, not '{method}'"
        )
    if len(runs) < 2:
        raise ServiceError("fusing needs at least two runs")
    if len({run.id for run in runs}) != len(runs):
        raise ServiceError("choose different runs to fuse")
    for run in runs:
        if run.test_set_id != test_set.id:
            raise ServiceError(f"run '{run.name}' is not a run of test set '{test_set.name}'")
        if run.kept_depth is not None:  # fusing needs the whole lists it no longer has
            raise ServiceError(
                f"run '{run.name}' is archived (it kept its top {run.kept_depth} entries per "
                "query): fusion needs whole runs"
            )
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
    from ndcg_labeler.formats import ParsedRun  # numpy + pyarrow: not at start-up

    per_run = [_run_arrays(run) for run in runs]
    qids = sorted({qid for run_qids, _, _, _ in per_run for qid in run_qids})
    index = {qid: i for i, qid in enumerate(qids)}
    progress("fuse", 0, len(qids), 0)
    inputs = [
        (np.repeat(np.array([index[q] for q in run_qids], dtype=np.int64), counts), docids, scores)
        for run_qids, counts, docids, scores in per_run
    ]
    query, docids, scores, hashes = fuse_arrays(inputs, method, k)
    sha256 = _trec_text_sha256(qids, query, docids, scores, progress)
    if not query.size:
        raise ServiceError("the runs to fuse have no ranked entries")
    present = np.unique(query)
    offsets = np.searchsorted(query, np.append(present, len(qids))).astype(np.int64)
    kept = [qids[i] for i in present.tolist()]
    parsed = ParsedRun(kept, offsets, docids, scores, "trec", query.size, hashes)
    return store_parsed_run(
        test_set,
        parsed,
        sha256,
        f"fused-{method}.trec",
        name,
        created_by,
        depth=depth,
        notes=describe(runs, method, k),
        progress=progress,
        in_trec_order=True,  # fuse_arrays orders each query with rank_grouped already
    )


def _run_arrays(run: Run) -> tuple[list[str], np.ndarray, pa.LargeStringArray, np.ndarray]:
    """The run's ranked lists as arrays: qids, entries per qid, docids and scores (rank order).

    Blobs are the RunQuery rows' newline-joined docids (see upload): joined into one buffer,
    the newlines give the offsets and are dropped, so no Python object is made per docid."""
    import pyarrow as pa

    rows = db.session.execute(
        sa.select(Query.qid, RunQuery.docids, RunQuery.scores)
        .join(Query, Query.id == RunQuery.query_id)
        .where(RunQuery.run_id == run.id)
    ).all()
    qids = [qid for qid, _, _ in rows]
    decoded = [decode_ranked(blob, sc) for _, blob, sc in rows]
    counts = np.array([values.size for _, values in decoded], dtype=np.int64)
    scores = np.concatenate([values for _, values in decoded]) if decoded else np.empty(0)
    raw = np.frombuffer(b"\n".join(text for text, _ in decoded if text), dtype=np.uint8)
    newlines = np.flatnonzero(raw == ord("\n"))
    entries = newlines.size + 1 if raw.size else 0
    if entries != scores.size:
        raise ServiceError(f"run '{run.name}' has stored docids and scores that do not match")
    # Docid i starts after i newlines: at its byte position minus i once they are dropped.
    starts = newlines + 1 - np.arange(1, newlines.size + 1)
    offsets = np.concatenate(([0], starts, [raw.size - newlines.size])).astype(np.int64)
    text = np.delete(raw, newlines)
    docids = pa.LargeStringArray.from_buffers(entries, pa.py_buffer(offsets), pa.py_buffer(text))
    docids.validate(full=True)
    return qids, counts, docids, scores


def _trec_text_sha256(
    qids: list[str],
    query: np.ndarray,
    docids: pa.LargeStringArray,
    scores: np.ndarray,
    progress: Progress,
) -> str:
    """The sha256 of the run as a TREC file, `{qid} Q0 {docid} {rank} {score!r} fused` per
    entry: what an upload of that file would record. Built and hashed _EVERY_QUERIES queries
    at a time (progress between them: a Cancelled stops before anything is stored)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def text(value: str) -> pa.Scalar:
        return pa.scalar(value, pa.large_string())

    names = pa.array(qids, pa.large_string())
    starts = np.searchsorted(query, np.arange(len(qids) + 1))
    bounds = starts.tolist()
    digest = hashlib.sha256()
    for begin in range(0, len(qids), _EVERY_QUERIES):
        progress("fuse", begin, len(qids), bounds[begin])
        end = min(begin + _EVERY_QUERIES, len(qids))
        lo, hi = bounds[begin], bounds[end]
        if lo == hi:
            continue
        rows = query[lo:hi]
        ranks = np.arange(lo, hi, dtype=np.int64) - starts[rows] + 1
        lines = pc.binary_join_element_wise(
            names.take(pa.array(rows)),
            text("Q0"),
            docids.slice(lo, hi - lo),
            pc.cast(pa.array(ranks), pa.large_string()),
            _score_text(scores[lo:hi]),
            text("fused\n"),
            text(" "),
        )
        offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[: len(lines) + 1]
        digest.update(memoryview(lines.buffers()[2])[int(offsets[0]) : int(offsets[-1])])
    progress("fuse", len(qids), len(qids), bounds[-1])
    return digest.hexdigest()


def _score_text(scores: np.ndarray) -> pa.LargeStringArray:
    """repr() of every score. Arrow's float formatting writes the same shortest digits, and in
    [1e-4, 1e9) the same text too, except for whole numbers ('1' for '1.0'): those and the
    values outside that range are written by repr, once per distinct value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = pc.cast(pa.array(scores), pa.large_string())
    odd = ~((scores >= 1e-4) & (scores < 1e9) & (scores != np.floor(scores)))
    if not odd.any():
        return out
    bits, inverse = np.unique(scores[odd].view(np.int64), return_inverse=True)
    written = pa.array([repr(v) for v in bits.view(np.float64).tolist()], pa.large_string())
    return pc.replace_with_mask(out, pa.array(odd), written.take(pa.array(inverse)))
