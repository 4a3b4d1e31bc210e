"""What a job can be (an import, a run upload, a machine judge, an endpoint fetch, pooling,
a fusion); how each is enqueued and run."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, BinaryIO

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, Run, TestSet, User
from ndcg_labeler.services import ServiceError, imports, pooling
from ndcg_labeler.services import endpoints as endpoints_service
from ndcg_labeler.services import judges as judges_service
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services._progress import Progress
from ndcg_labeler.services.jobs import queue, records, spool

IMPORT_FIELDS = ("queries", "corpus", "pool", "qrels")


def _enqueue(
    kind: str, test_set: TestSet, user: User | None, params: dict[str, Any], files: dict
) -> Job:
    """Spool the files, record the job, queue it; on a queue failure nothing is left behind."""
    folder = spool.spool(files)
    job = records.create_job(kind, test_set.id, user.id if user else None, params, folder)
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
) -> Job:
    """A background import of the given (filename, stream) per field of IMPORT_FIELDS."""
    if not files:
        raise ServiceError("choose at least one file to import")
    params = {"source": source, "files": {field: name for field, (name, _) in files.items()}}
    return _enqueue("import", test_set, user, params, files)


def enqueue_upload(
    test_set: TestSet,
    stream: BinaryIO,
    filename: str,
    name: str,
    user: User | None,
    depth: int | None = None,
    notes: str = "",
) -> Job:
    """A background run upload (the name is checked now, and again when it is stored)."""
    name = run_service.clean_name(name)
    if run_service.name_taken(test_set, name):
        raise ServiceError(f"this test set already has a run named '{name}'")
    params = {"name": name, "depth": depth, "notes": notes, "filename": filename}
    return _enqueue("run_upload", test_set, user, params, {"run": (filename, stream)})


def _test_set(job: Job) -> TestSet:
    test_set = db.session.get(TestSet, job.test_set_id) if job.test_set_id else None
    if test_set is None:
        raise ServiceError("the test set was deleted")
    return test_set


def _run_import(job: Job, progress: Progress) -> dict[str, Any]:
    """Import the spooled files; the result is the import report."""
    test_set = _test_set(job)
    params = job.params or {}
    with ExitStack() as stack:
        files = {}
        for field in IMPORT_FIELDS:
            found = spool.spooled(job.upload_path, field)
            if found is not None:
                path, filename = found
                stream = stack.enter_context(open(path, "rb"))
                files[field] = imports.ImportFile(stream, filename)
        report = imports.import_files(
            test_set,
            **files,
            source=params.get("source"),
            actor_id=job.user_id,
            progress=progress,
        )
    return {"lines": report.lines(), "files": report.files, "source": report.source}


def _run_upload(job: Job, progress: Progress) -> dict[str, Any]:
    """Upload the spooled run; the result names the run and holds its upload report."""
    test_set = _test_set(job)
    params = job.params or {}
    found = spool.spooled(job.upload_path, "run")
    if found is None:
        raise ServiceError("the uploaded file is gone")
    path, _ = found
    user = db.session.get(User, job.user_id) if job.user_id else None
    with open(path, "rb") as stream:
        run = run_service.upload_run(
            test_set,
            stream,
            params.get("filename") or "upload",
            params.get("name") or "",
            user,
            depth=params.get("depth"),
            notes=params.get("notes") or "",
            progress=progress,
        )
    return {"run_id": run.id, "run_name": run.name, "report": run.report}


def enqueue_judge(test_set: TestSet, judge_id: int, pairs: str, user: User | None) -> Job:
    """A background run of a machine judge over `pairs` (unjudged|all|human|sample:N)."""
    judge = judges_service.get_judge(judge_id)
    if judge is None:
        raise ServiceError("unknown judge")
    judges_service.select_pairs(test_set, pairs)  # refuse a bad choice now, not in the worker
    params = {"judge_id": judge.id, "judge": judge.name, "pairs": pairs}
    return _enqueue("judge", test_set, user, params, {})


def _run_judge(job: Job, progress: Progress) -> dict[str, Any]:
    """Ask the judge; answers are committed batch by batch, so a cancel keeps what it got."""
    test_set = _test_set(job)
    params = job.params or {}
    judge = judges_service.get_judge(int(params.get("judge_id") or 0))
    if judge is None:
        raise ServiceError("the judge was deleted")
    tokens_used = {"prompt_tokens": 0, "completion_tokens": 0}

    def report(done: int, total: int, tokens: dict[str, int]) -> None:
        tokens_used.update(tokens)
        progress("judge", done, total, done)

    found = judges_service.run_judge(test_set, judge, params.get("pairs") or "unjudged", report)
    return {**found.to_json(), "skipped": found.skipped, **tokens_used}


def enqueue_fetch(
    test_set: TestSet,
    endpoint_name: str,
    run_name: str,
    k: int,
    accept_partial: bool,
    user: User | None,
) -> Job:
    """A background fetch of a run from one of the test set's retriever endpoints."""
    endpoints_service.require_endpoint(test_set, endpoint_name)
    run_name = run_service.clean_name(run_name)
    if run_service.name_taken(test_set, run_name):
        raise ServiceError(f"this test set already has a run named '{run_name}'")
    params = {"endpoint": endpoint_name, "run": run_name, "k": k, "accept_partial": accept_partial}
    return _enqueue("fetch", test_set, user, params, {})


def _run_fetch(job: Job, progress: Progress) -> dict[str, Any]:
    """Fetch every query; the run is stored only at the end (whole, or as accepted)."""
    test_set = _test_set(job)
    params = job.params or {}
    endpoint = endpoints_service.require_endpoint(test_set, params.get("endpoint") or "")
    user = db.session.get(User, job.user_id) if job.user_id else None
    run, report = endpoints_service.fetch_run(
        test_set,
        endpoint,
        params.get("run") or "",
        k=int(params.get("k") or 100),
        accept_partial=bool(params.get("accept_partial")),
        user=user,
        progress=progress,
    )
    return {**report.to_json(), "failures": report.failed, "run_id": run.id if run else None}


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
    return _enqueue("pool", test_set, user, params, {})


def _run_pool(job: Job, progress: Progress) -> dict[str, Any]:
    """Pool in one transaction: a cancel or a crash adds nothing."""
    test_set = _test_set(job)
    params = job.params or {}
    added, plan = pooling.add_pool(
        test_set,
        _runs_of(job, test_set),
        int(params.get("depth") or 0),
        params.get("judge"),
        progress=progress,
    )
    return {
        "added": added,
        "source": plan.source,
        "depth": plan.depth,
        "runs": [run.name for run in plan.runs],
        "already_queued": plan.already_queued,
        "not_in_corpus": plan.not_in_corpus,
    }


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
    return _enqueue("fuse", test_set, user, params, {})


def _runs_of(job: Job, test_set: TestSet) -> list[Run]:
    """The job's runs (params["runs"]), all of them still there."""
    ids = (job.params or {}).get("runs") or []
    runs = [run_service.get_run(test_set, int(run_id)) for run_id in ids]
    found = [run for run in runs if run is not None]
    if len(found) != len(runs):
        raise ServiceError("a run this job works on was deleted")
    return found


def _run_fuse(job: Job, progress: Progress) -> dict[str, Any]:
    """Fuse and store the run (one transaction, like an upload)."""
    test_set = _test_set(job)
    params = job.params or {}
    user = db.session.get(User, job.user_id) if job.user_id else None
    run = run_service.fuse_runs(
        test_set,
        _runs_of(job, test_set),
        params.get("name") or "",
        user,
        method=params.get("method") or "rrf",
        k=int(params.get("k") or 0),
        progress=progress,
    )
    return {"run_id": run.id, "run_name": run.name, "notes": run.notes, "report": run.report}


RUNNERS: dict[str, Callable[[Job, Progress], dict[str, Any]]] = {
    "fetch": _run_fetch,
    "import": _run_import,
    "run_upload": _run_upload,
    "judge": _run_judge,
    "pool": _run_pool,
    "fuse": _run_fuse,
}
TITLES = {
    "import": "Import",
    "run_upload": "Run upload",
    "judge": "Machine judge",
    "fetch": "Fetch from an endpoint",
    "pool": "Pooling",
    "fuse": "Fusing runs",
}
