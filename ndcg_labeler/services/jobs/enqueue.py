"""Starting a job: check what can be checked at once, spool its files, record it, queue it."""

from __future__ import annotations

from typing import Any, BinaryIO

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, Run, TestSet, User
from ndcg_labeler.services import ServiceError, judge_costs, outbound, pooling, probes
from ndcg_labeler.services import endpoints as endpoints_service
from ndcg_labeler.services import judges as judges_service
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.jobs import kinds, queue, records, spool
from ndcg_labeler.services.jobs.kinds import Kind


def _enqueue(
    kind: Kind, test_set: TestSet, user: User | None, params: dict[str, Any], files: dict
) -> Job:
    """Spool the files, record the job, queue it; on a queue failure nothing is left behind."""
    folder = spool.spool(files)
    job = records.create_job(kind.name, test_set.id, user.id if user else None, params, folder)
    try:
        queue.send(job.id)
    except Exception as exc:
        job.state, job.error = "failed", f"the job queue is unavailable: {exc}"
        job.message = job.error
        db.session.commit()
        records.remove_upload(job)
        raise ServiceError(job.error) from exc
    return job


def enqueue_import(
    test_set: TestSet,
    files: dict[str, tuple[str, BinaryIO]],
    source: str | None,
    user: User | None,
    only_referenced: bool = False,
    peer: str | None = None,
    peer_format: str | None = None,
    rating_map: str | None = None,
) -> Job:
    """A background import of the given (filename, stream) per field of kinds.IMPORT_FIELDS.

    `peer` names the peer's file (Quepid, SRW) the files were translated from: the report names
    it, as an import of it in the request does, and no files then means it brings nothing new.
    With `peer_format` (one of interop.PEER_FORMATS) `files` holds the peer's own file under
    kinds.PEER_FIELD instead: the job translates it when it runs (with `rating_map`), so its
    texts meet the queries the test set has then, as an import in the request does.
    """
    if not files and peer is None:
        raise ServiceError("choose at least one file to import")
    params: dict[str, Any] = {
        "source": source,
        "files": {field: name for field, (name, _) in files.items()},
        "only_referenced": only_referenced,
    }
    if peer is not None:
        params["peer"] = peer
    if peer_format is not None:
        params["peer_format"] = peer_format
        params["rating_map"] = rating_map
    return _enqueue(kinds.IMPORT, test_set, user, params, files)


def enqueue_ir_dataset(
    test_set: TestSet, dataset: str, source: str | None, user: User | None
) -> Job:
    """A background import of ir_datasets' NAME from its local cache (nothing is spooled)."""
    if not dataset.strip():
        raise ServiceError("name the ir_datasets dataset to import")
    params = {"source": source, "ir_datasets": dataset.strip(), "files": {}}
    return _enqueue(kinds.IMPORT, test_set, user, params, {})


def enqueue_upload(
    test_set: TestSet,
    stream: BinaryIO,
    filename: str,
    name: str,
    user: User | None,
    depth: int | None = None,
    notes: str = "",
    series: str = "",
) -> Job:
    """A background run upload (the name is checked now, and again when it is stored)."""
    name = run_service.clean_name(name)
    series = run_service.clean_series(series) or ""
    if run_service.name_taken(test_set, name):
        raise ServiceError(f"this test set already has a run named '{name}'")
    params = {"name": name, "depth": depth, "notes": notes, "filename": filename}
    if series:
        params["series"] = series
    return _enqueue(kinds.RUN_UPLOAD, test_set, user, params, {"run": (filename, stream)})


def enqueue_judge(
    test_set: TestSet,
    judge_id: int,
    pairs: str,
    user: User | None,
    max_cost: float | None = None,
) -> Job:
    """A background run of a machine judge over `pairs` (unjudged|all|human|sample:N, or
    again:STATUSES to ask answered pairs afresh), within `max_cost` dollars when given."""
    judge = judges_service.get_judge(judge_id)
    if judge is None:
        raise ServiceError("unknown judge")
    missing = judge_costs.unpriced(judge) if max_cost is not None else []
    if missing:
        raise ServiceError(
            f"set {' and '.join(missing)}'s prices per million tokens before giving a budget"
        )
    # Refuse a bad choice now, not in the worker.
    if pairs.startswith("again:"):
        if pairs.removeprefix("again:") not in judges_service.AGAIN_CHOICES:
            raise ServiceError(f"ask again: choose {', '.join(judges_service.AGAIN_CHOICES)}")
    else:
        judges_service.select_pairs(test_set, pairs)
    # The worker has no request to tell the app's own address by: the queuing request's names.
    params: dict[str, Any] = {"judge_id": judge.id, "judge": judge.name, "pairs": pairs}
    params["own"] = outbound.own_names()
    if max_cost is not None:
        params["max_cost"] = max_cost
    return _enqueue(kinds.JUDGE, test_set, user, params, {})


def enqueue_probe(
    test_set: TestSet, judge_id: int, n: int, user: User | None, max_cost: float | None = None
) -> Job:
    """A background gullibility probe of a judge on `n` pairs people graded 0, within
    `max_cost` dollars when given."""
    judge = judges_service.get_judge(judge_id)
    if judge is None:
        raise ServiceError("unknown judge")
    probes.check_probe(judge, n, max_cost)  # refuse now, not in the worker
    params: dict[str, Any] = {
        "judge_id": judge.id,
        "judge": judge.name,
        "pairs": n,
        "own": outbound.own_names(),
    }
    if max_cost is not None:
        params["max_cost"] = max_cost
    return _enqueue(kinds.PROBE, test_set, user, params, {})


def enqueue_fetch(
    test_set: TestSet,
    endpoint_name: str,
    run_name: str,
    k: int,
    accept_partial: bool,
    user: User | None,
) -> Job:
    """A background fetch of a run from one of the test set's retriever endpoints."""
    endpoints_service.require_endpoint(test_set, endpoint_name, lock=True)
    run_name = run_service.clean_name(run_name)
    if run_service.name_taken(test_set, run_name):
        raise ServiceError(f"this test set already has a run named '{run_name}'")
    params = {"endpoint": endpoint_name, "run": run_name, "k": k, "accept_partial": accept_partial}
    params["own"] = outbound.own_names()  # as for a judge
    return _enqueue(kinds.FETCH, test_set, user, params, {})


def enqueue_pool(
    test_set: TestSet, runs: list[Run], depth: int, judge: str | None, user: User | None
) -> Job:
    """A background pooling of the runs' top `depth` into the labeling queue."""
    pooling.check_depth(depth)  # refuse a bad depth now, not in the worker
    if not runs:
        raise ServiceError("choose at least one run to pool from")
    params = {
        "runs": [run.id for run in runs],
        "run_names": [run.name for run in runs],
        "depth": depth,
        "judge": judge,
    }
    return _enqueue(kinds.POOL, test_set, user, params, {})


def enqueue_fuse(
    test_set: TestSet, runs: list[Run], name: str, method: str, k: int, user: User | None
) -> Job:
    """A background fusion of `runs` into a new run `name` (checked now, and when stored)."""
    run_service.check_fusion(test_set, runs, method, k)
    name = run_service.clean_name(name)
    if run_service.name_taken(test_set, name):
        raise ServiceError(f"this test set already has a run named '{name}'")
    params = {
        "runs": [run.id for run in runs],
        "run_names": [run.name for run in runs],
        "name": name,
        "method": method,
        "k": k,
        "filename": f"fused-{method}.trec",
    }
    return _enqueue(kinds.FUSE, test_set, user, params, {})


def enqueue_bm25(
    test_set: TestSet, name: str, settings: run_service.Bm25Settings, user: User | None
) -> Job:
    """A background BM25 run of the test set's corpus (checked now, and when stored)."""
    settings.check()
    name = run_service.clean_name(name or "BM25")
    if run_service.name_taken(test_set, name):
        raise ServiceError(f"this test set already has a run named '{name}'")
    params = {"name": name, "depth": settings.depth, "k1": settings.k1, "b": settings.b}
    return _enqueue(kinds.BM25, test_set, user, params, {})
