"""What the import page and the API share for peers' files and ir_datasets: which one was sent,
large datasets as jobs, and downloads."""

from __future__ import annotations

import os
from typing import Any

from flask import url_for
from werkzeug.datastructures import FileStorage

from ndcg_labeler.models import Job, TestSet, User
from ndcg_labeler.services import ServiceError, imports, interop, jobs

PEER_FIELDS = {"quepid": "quepid", "srw_judgments": "srw-judgments", "srw_queries": "srw-queries"}
"""Form field of each peer file -> its format in interop.PEER_FORMATS."""

ALONE = (
    "import a peer's file (Quepid, SRW judgments, SRW query set) or an ir_datasets dataset "
    "on its own, without other files"
)

RATED = ("quepid", "srw_judgments")
"""The peer fields whose ratings a rating map places onto grades."""
RATING_MAP_ONLY = "the rating map applies to Quepid judgments and SRW judgment lists only"


def check_rating_map(rating_map: str | None, peers: dict[str, FileStorage]) -> None:
    """Refuse a rating map beside files it would not apply to: ignored, it would store the
    peer's ratings (or nothing) unmapped while the caller believes them mapped."""
    if rating_map and not any(field in peers for field in RATED):
        raise ServiceError(RATING_MAP_ONLY)


def peer_file(storage: FileStorage) -> imports.ImportFile:
    """An uploaded file by its base name (browsers send one; some clients add a path)."""
    name = os.path.basename((storage.filename or "").replace("\\", "/")) or "upload"
    return imports.ImportFile(storage.stream, name)


def import_peer(
    test_set: TestSet,
    peers: dict[str, FileStorage],
    dataset: str,
    own_given: bool,
    *,
    rating_map: str | None,
    source: str | None,
    actor_id: int,
) -> imports.ImportReport:
    """The one peer file (or ir_datasets name) of a request, imported; more than one refused."""
    if len(peers) + bool(dataset) != 1 or own_given:
        raise ServiceError(ALONE)
    if dataset:
        return interop.import_ir_dataset(test_set, dataset, source=source, actor_id=actor_id)
    field, storage = next(iter(peers.items()))
    return interop.import_peer(
        test_set,
        PEER_FIELDS[field],
        peer_file(storage),
        rating_map=rating_map,
        source=source,
        actor_id=actor_id,
    )


def dataset_later(
    test_set: TestSet,
    peers: dict[str, FileStorage],
    dataset: str,
    own_given: bool,
    *,
    source: str | None,
    user: User,
) -> Job | None:
    """A job importing the ir_datasets dataset when it is large (its cached files above the
    job threshold, or of a size that cannot be told); None: import it in this request."""
    if not dataset or peers or own_given:
        return None  # not a dataset alone: import_peer says what is wrong, or imports it
    size = interop.ir_dataset_size(dataset)
    if size is not None and size <= jobs.threshold_bytes():
        return None
    return jobs.enqueue_ir_dataset(test_set, dataset, source, user)


def peer_later(
    test_set: TestSet,
    fmt: str,
    storage: FileStorage,
    *,
    rating_map: str | None,
    source: str | None,
    user: User,
) -> Job:
    """A peer file checked now (a bad record is refused at once), imported by a job (one that
    brings nothing new, too: the job's result then says so, as the inline import does).

    The job gets the peer's own file and translates it again when it runs: its texts are
    matched to the queries the test set has then, so a query added meanwhile with one of
    the file's texts is that query, not a second one with the same text."""
    file = peer_file(storage)
    interop.native_files(test_set, fmt, file, rating_map)
    file.source.seek(0)
    files = {"peer": (file.filename, file.source)}
    return jobs.enqueue_import(
        test_set,
        files,  # type: ignore[arg-type]
        source,
        user,
        peer=file.filename,
        peer_format=fmt,
        rating_map=rating_map,
    )


def report_json(report: imports.ImportReport) -> dict[str, Any]:
    """An import's answer: its report lines and files, and whether it brought nothing new
    (with the CLI's words then as `message`)."""
    message = interop.nothing_new_message(report)
    return {
        "report": report.lines(),
        "files": report.files,
        "nothing_new": message is not None,
        "message": message,
    }


def job_json(job: Job) -> dict[str, Any]:
    """A job's state and progress, as the job page shows them."""
    figures = jobs.figures(job)
    finished = jobs.is_finished(job)
    return {
        "id": job.id,
        "kind": job.kind,
        "title": jobs.title(job.kind),
        "state": job.state,
        "phase": job.phase,
        "phase_text": jobs.PHASES.get(job.phase or "", job.phase),
        "done": job.done,
        "total": job.total,
        "rows": job.rows,
        "fraction": figures.fraction,
        "message": job.message,
        "error": job.error,
        "finished": finished,
        "stopping": jobs.stopping(job),
        "result": job.result if finished else None,
        "url": url_for("api.job", job_id=job.id, _external=True),
        "page_url": url_for("jobs.show", job_id=job.id, _external=True),
    }
