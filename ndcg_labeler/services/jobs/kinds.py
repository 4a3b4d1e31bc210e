"""What a job can be (an import, a run upload, a machine judge, an endpoint fetch, pooling,
a fusion): one registry of kinds, each with its title, what the worker runs, and what a job
that did not finish leaves behind."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, Run, TestSet, User
from ndcg_labeler.services import ServiceError, ensembles, imports, interop, pooling, probes
from ndcg_labeler.services import endpoints as endpoints_service
from ndcg_labeler.services import judges as judges_service
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services import series as series_service
from ndcg_labeler.services._progress import Progress
from ndcg_labeler.services.jobs import spool
from ndcg_labeler.services.jobs.reporting import warn_from_start

IMPORT_FIELDS = ("queries", "corpus", "pool", "qrels")
# Where a peer's own file (Quepid, SRW) is spooled, translated when the job runs.
PEER_FIELD = "peer"


@dataclass(frozen=True)
class StoredRun:
    """How to recognise the run a job stored: the parameter naming it, and the file name it is
    stored under (an upload keeps its file's name, a fetch ENDPOINT.trec, a fusion
    fused-METHOD.trec)."""

    name_param: str
    filename: Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class Kind:
    """One kind of job: its name (stored on the job), the title its pages show, what the
    worker runs, what a failed or cancelled job leaves (its message says so), and, for a job
    that stores a run and then scores it, how to find that run after a crash."""

    name: str
    title: str
    run: Callable[[Job, Progress], dict[str, Any]]
    nothing: str = "nothing was written"
    stored_run: StoredRun | None = None


def _test_set(job: Job) -> TestSet:
    test_set = db.session.get(TestSet, job.test_set_id) if job.test_set_id else None
    if test_set is None:
        raise ServiceError("the test set was deleted")
    return test_set


def _runs_of(job: Job, test_set: TestSet) -> list[Run]:
    """The job's runs (params["runs"]), all of them still there."""
    ids = (job.params or {}).get("runs") or []
    runs = [run_service.get_run(test_set, int(run_id)) for run_id in ids]
    found = [run for run in runs if run is not None]
    if len(found) != len(runs):
        raise ServiceError("a run this job works on was deleted")
    return found


def _import_result(report: imports.ImportReport) -> dict[str, Any]:
    """An import's report as the job's result; `nothing_new` and `message` as the API's answer
    to an import made in the request (the message is then also the job's own)."""
    message = interop.nothing_new_message(report)
    return {
        "lines": report.lines(),
        "files": report.files,
        "source": report.source,
        "nothing_new": message is not None,
        "message": message,
    }


def _run_import(job: Job, progress: Progress) -> dict[str, Any]:
    """Import the spooled files, or ir_datasets' dataset; the result is the import report."""
    test_set = _test_set(job)
    params = job.params or {}
    if params.get("ir_datasets"):
        report = interop.import_ir_dataset(
            test_set,
            params["ir_datasets"],
            source=params.get("source"),
            actor_id=job.user_id,
            progress=progress,
        )
        return _import_result(report)
    peer = params.get("peer")
    if params.get("peer_format"):
        return _import_result(_run_peer_import(job, test_set, params, progress))
    with ExitStack() as stack:
        files = {}
        for field in IMPORT_FIELDS:
            found = stack.enter_context(spool.spooled(job.upload_path, field))
            if found is not None:
                path, filename = found
                stream = stack.enter_context(open(path, "rb"))
                files[field] = imports.ImportFile(stream, filename)
        if files or peer is None:
            report = imports.import_files(
                test_set,
                **files,
                source=params.get("source"),
                actor_id=job.user_id,
                progress=progress,
                only_referenced=bool(params.get("only_referenced")),
            )
        else:  # a peer's file whose every query the set has, with no ratings: nothing to write
            report = imports.ImportReport()
    if peer is not None:
        report.files = [peer]  # the file that was sent, as interop.import_peer reports it
    return _import_result(report)


def _run_peer_import(
    job: Job, test_set: TestSet, params: dict[str, Any], progress: Progress
) -> imports.ImportReport:
    """Translate the spooled peer file now and import it: its texts are matched to the queries
    the test set has at this moment (one added since it was sent is not created twice)."""
    with spool.spooled(job.upload_path, PEER_FIELD) as found:
        if found is None:
            raise ServiceError("the uploaded file is gone")
        path, filename = found
        with open(path, "rb") as stream:
            return interop.import_peer(
                test_set,
                params["peer_format"],
                imports.ImportFile(stream, params.get("peer") or filename),
                rating_map=params.get("rating_map"),
                source=params.get("source"),
                actor_id=job.user_id,
                progress=progress,
            )


def _run_upload(job: Job, progress: Progress) -> dict[str, Any]:
    """Upload the spooled run; the result names the run and holds its upload report."""
    test_set = _test_set(job)
    params = job.params or {}
    user = db.session.get(User, job.user_id) if job.user_id else None
    with ExitStack() as stack:
        found = stack.enter_context(spool.spooled(job.upload_path, "run"))
        if found is None:
            raise ServiceError("the uploaded file is gone")
        stream = stack.enter_context(open(found[0], "rb"))
        run = run_service.upload_run(
            test_set,
            stream,
            params.get("filename") or "upload",
            params.get("name") or "",
            user,
            depth=params.get("depth"),
            notes=params.get("notes") or "",
            progress=progress,
            series=params.get("series") or None,
        )
    return {"run_id": run.id, "run_name": run.name, "report": run.report}


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

    warn_from_start(progress, "judge", ensembles.key_warnings(judge))
    pairs = params.get("pairs") or "unjudged"
    max_cost = params.get("max_cost")
    found = judges_service.run_judge(
        test_set,
        judge,
        pairs,
        report,
        own=params.get("own") or (),
        max_cost=None if max_cost is None else float(max_cost),
    )
    return {
        **found.to_json(),
        "skipped": found.skipped,
        **tokens_used,
        **_warned(found.warnings),
    }


def _warned(warnings: list[str]) -> dict[str, Any]:
    """A judge's or probe's job message saying its warnings (none: "done" stays), so a job
    whose every answer failed for want of a key says why where it is followed."""
    if not warnings:
        return {}
    return {"message": "done — warning: " + "; ".join(warnings)}


def _run_probe(job: Job, progress: Progress) -> dict[str, Any]:
    """Probe the judge; answers are committed batch by batch, a cut-off probe is not reported."""
    test_set = _test_set(job)
    params = job.params or {}
    judge = judges_service.get_judge(int(params.get("judge_id") or 0))
    if judge is None:
        raise ServiceError("the judge was deleted")

    def report(done: int, total: int, tokens: dict[str, int]) -> None:
        progress("probe", done, total, done)

    warn_from_start(progress, "probe", ensembles.key_warnings(judge))
    n = int(params.get("pairs") or probes.DEFAULT_PAIRS)
    max_cost = params.get("max_cost")
    found = probes.run_probe(
        test_set,
        judge,
        n,
        report,
        own=params.get("own") or (),
        max_cost=None if max_cost is None else float(max_cost),
    )
    return {
        key: found[key]
        for key in (
            *probes.JSON_KEYS,
            "probe_id",
            "prompt_tokens",
            "completion_tokens",
            "cost",
            "money",
            "unread",
            "max_cost",
            "stopped_at_budget",
            "not_asked",
            "warnings",
        )
    } | _warned(found["warnings"])


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
        own=params.get("own") or (),
    )
    return {**report.to_json(), "failures": report.failed, "run_id": run.id if run else None}


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


def _run_bm25(job: Job, progress: Progress) -> dict[str, Any]:
    """Index the corpus, rank it for every query, and store the run (one transaction)."""
    test_set = _test_set(job)
    params = job.params or {}
    user = db.session.get(User, job.user_id) if job.user_id else None
    settings = run_service.Bm25Settings(
        depth=int(params.get("depth") or 0), k1=float(params["k1"]), b=float(params["b"])
    )
    run = run_service.create_bm25_run(
        test_set, params.get("name") or "", user, settings, progress=progress
    )
    return {"run_id": run.id, "run_name": run.name, "notes": run.notes, "report": run.report}


def _run_scheduled(job: Job, progress: Progress) -> dict[str, Any]:
    """A scheduled evaluation: fetch into the series, gate, alert; the check is the result."""
    test_set = _test_set(job)
    params = job.params or {}
    due = series_service.Due(
        test_set.id,
        params.get("endpoint") or "",
        params.get("series") or "",
        int(params.get("k") or 100),
        datetime.fromisoformat(params["slot"]),
    )
    check = series_service.evaluate(test_set, due, progress, own=params.get("own") or ())
    return {
        "check_id": check.id,
        "outcome": check.outcome,
        "run_id": check.run_id,
        "baseline_run_id": check.baseline_run_id,
        "alert": check.alert,
        "summary": check.summary,
    }


IMPORT = Kind("import", "Import", _run_import, "nothing was imported")
RUN_UPLOAD = Kind(
    "run_upload",
    "Run upload",
    _run_upload,
    "nothing was stored",
    StoredRun("name", lambda params: (params.get("filename") or "upload")[:300]),
)
JUDGE = Kind(
    "judge",
    "Machine judge",
    _run_judge,
    "the answers received so far are kept; run the judge again to resume",
)
PROBE = Kind(
    "probe",
    "Gullibility probe",
    _run_probe,
    "the answers received so far are kept apart, and the probe is not shown as finished",
)
FETCH = Kind(
    "fetch",
    "Fetch from an endpoint",
    _run_fetch,
    "no run was stored",
    StoredRun("run", lambda params: f"{params.get('endpoint') or ''}.trec"[:300]),
)
POOL = Kind("pool", "Pooling", _run_pool)
FUSE = Kind(
    "fuse",
    "Fusing runs",
    _run_fuse,
    stored_run=StoredRun("name", lambda params: (params.get("filename") or "")[:300]),
)
BM25 = Kind(
    "bm25",
    "BM25 run",
    _run_bm25,
    stored_run=StoredRun("name", lambda params: "bm25.trec"),
)
SCHEDULED = Kind(
    "scheduled",
    "Scheduled evaluation",
    _run_scheduled,
    "no run was stored (the slot is not run again: the next one is)",
)
KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (IMPORT, RUN_UPLOAD, JUDGE, PROBE, FETCH, POOL, FUSE, BM25, SCHEDULED)
}


def title(name: str) -> str:
    """The title pages show for a kind of job (its stored name when it is no longer known)."""
    kind = KINDS.get(name)
    return kind.title if kind is not None else name
