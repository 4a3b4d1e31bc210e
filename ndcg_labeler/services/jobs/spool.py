"""Uploaded files a job will read, spooled into the database (table job_file) until it ends,
or into an S3-compatible object store when NDCG_JOB_STORE_URL names one (object_store.py).

Web servers and job workers may run on different machines with no disk in common: a server
streams each upload into 1 MiB parts of job_file (in the transaction that records the job), a
worker streams them back into a temporary file of its own while the job runs, and the parts
are deleted when the job ends. Jobs queued before this (Job.upload_path a folder under
instance/uploads/) are still read from there, and such folders are still swept.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import BinaryIO

import sqlalchemy as sa
from flask import current_app

from ndcg_labeler.extensions import db
from ndcg_labeler.models import JobFile, utcnow
from ndcg_labeler.services import ServiceError

from . import object_store

_CHUNK = 1 << 20
PREFIX = "db:"
"""Job.upload_path of files spooled into the database: "db:<token>"."""

_file = JobFile.__table__


def threshold_bytes() -> int:
    """Uploads larger than this (NDCG_JOB_THRESHOLD_MB, default 2) become background jobs."""
    return int(float(current_app.config.get("NDCG_JOB_THRESHOLD_MB", 2)) * 1024 * 1024)


def stream_size(stream: BinaryIO) -> int:
    """Bytes from the stream's position to its end (the position is kept)."""
    here = stream.tell()
    end = stream.seek(0, os.SEEK_END)
    stream.seek(here)
    return end - here


def spool(files: dict[str, tuple[str, BinaryIO]]) -> str:
    """Copy each (filename, stream) into job_file parts, in the session's transaction (the
    caller commits them with the job), or into the object store when one is configured;
    returns the job's upload_path, "db:<token>" or "s3:<token>" ("" when there are no files)."""
    if not files:
        return ""
    token = secrets.token_hex(12)
    if object_store.configured():
        object_store.put(token, {field: (_name(name), s) for field, (name, s) in files.items()})
        return object_store.PREFIX + token
    now = utcnow()
    insert = sa.insert(_file)
    for field, (filename, stream) in files.items():
        name = _name(filename)
        seq = 0
        # One part in memory at a time, however large the upload.
        while True:
            data = stream.read(_CHUNK)
            if not data and seq:
                break
            db.session.execute(
                insert,
                {
                    "token": token,
                    "field": field,
                    "filename": name,
                    "seq": seq,
                    "data": data,
                    "created_at": now,
                },
            )
            seq += 1
            if not data:  # an empty file: one empty part, so that the field is known
                break
    return PREFIX + token


def _name(filename: str) -> str:
    """The file's own name, without any folder a browser sent with it."""
    return (os.path.basename(filename.replace("\\", "/")) or "upload")[:300]


def _token(upload_path: str) -> str | None:
    return upload_path[len(PREFIX) :] if upload_path.startswith(PREFIX) else None


def _stored(upload_path: str) -> str | None:
    """The object-store token of an "s3:<token>" path (None for others); refused when the
    store that holds it is no longer configured."""
    if not upload_path.startswith(object_store.PREFIX):
        return None
    if not object_store.configured():
        raise ServiceError(
            "the job's files are in an object store, and NDCG_JOB_STORE_URL no longer names one"
        )
    return upload_path[len(object_store.PREFIX) :]


@contextmanager
def spooled(upload_path: str, field: str) -> Iterator[tuple[str, str] | None]:
    """(path, filename) of a local copy of the file spooled for `field` while the block runs,
    or None when none was. Parts are read one at a time; the copy is deleted afterwards."""
    stored = _stored(upload_path)
    if stored is not None:
        with object_store.fetched(stored, field) as found:
            yield found
        return
    token = _token(upload_path)
    if token is None:
        yield _on_disk(upload_path, field)
        return
    where = (_file.c.token == token, _file.c.field == field)
    name = db.session.scalar(sa.select(_file.c.filename).where(*where, _file.c.seq == 0))
    if name is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="ndcg-job-") as folder:
        path = os.path.join(folder, name)
        with open(path, "wb") as out:
            seq = 0
            while True:
                data = db.session.scalar(sa.select(_file.c.data).where(*where, _file.c.seq == seq))
                if data is None:
                    break
                out.write(data)
                seq += 1
        # Release the read transaction (and, on SQLite, its snapshot) before the job's work.
        db.session.rollback()
        yield path, name


def _on_disk(folder: str, field: str) -> tuple[str, str] | None:
    """The file of a job spooled under instance/uploads/ by an earlier version."""
    directory = os.path.join(folder, field)
    if not folder or not os.path.isdir(directory):
        return None
    names = os.listdir(directory)
    return (os.path.join(directory, names[0]), names[0]) if names else None


def remove(upload_path: str) -> None:
    """Delete a job's spooled files (database parts committed at once; a folder only inside
    the instance's uploads folder)."""
    stored = _stored(upload_path)
    if stored is not None:
        object_store.remove(stored)
        return
    token = _token(upload_path)
    if token is not None:
        db.session.execute(sa.delete(_file).where(_file.c.token == token))
        db.session.commit()
        return
    if not upload_path:
        return
    root = os.path.realpath(os.path.join(current_app.instance_path, "uploads"))
    path = os.path.realpath(upload_path)
    if os.path.commonpath([root, path]) == root and path != root:
        shutil.rmtree(path, ignore_errors=True)


def is_spooled(upload_path: str) -> bool:
    """Whether any of the job's spooled files is still stored."""
    stored = _stored(upload_path)
    if stored is not None:
        return object_store.exists(stored)
    token = _token(upload_path)
    if token is None:
        return bool(upload_path) and os.path.exists(upload_path)
    return (
        db.session.scalar(sa.select(_file.c.id).where(_file.c.token == token).limit(1)) is not None
    )


# A spool younger than this may belong to an upload whose job row is not committed yet.
SWEEP_GRACE_SECONDS = 15 * 60


def _newest_change(folder: str) -> float:
    """The latest modification time of the folder or anything in it."""
    newest = os.path.getmtime(folder)
    for parent, _, names in os.walk(folder):
        newest = max(
            [newest, os.path.getmtime(parent)]
            + [os.path.getmtime(os.path.join(parent, name)) for name in names]
        )
    return newest


def sweep(keep: set[str], now: float, grace: float = SWEEP_GRACE_SECONDS) -> list[str]:
    """Delete the spools no waiting or running job will read (`keep`: their upload paths), once
    older than `grace` seconds: left by a worker killed between ending its job and deleting
    its files, or by a server killed between spooling an upload and creating its job.
    Returns what was removed (database spools as "db:<token>", folders as paths)."""
    removed = _sweep_database(keep, grace)
    if object_store.configured():
        prefix = object_store.PREFIX
        kept = {path[len(prefix) :] for path in keep if path.startswith(prefix)}
        swept = object_store.sweep(kept, grace)
        removed += [object_store.PREFIX + token for token in swept]
    root = os.path.join(current_app.instance_path, "uploads")
    if not os.path.isdir(root):
        return removed
    kept = {os.path.realpath(path) for path in keep if _token(path) is None}
    for name in os.listdir(root):
        folder = os.path.realpath(os.path.join(root, name))
        if folder in kept or not os.path.isdir(folder):
            continue
        try:
            if now - _newest_change(folder) < grace:
                continue
        except FileNotFoundError:  # removed meanwhile by its own job
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _sweep_database(keep: set[str], grace: float) -> list[str]:
    """Delete job_file parts of tokens no kept job names, spooled more than `grace` s ago."""
    kept = {token for token in map(_token, keep) if token is not None}
    limit = utcnow() - timedelta(seconds=grace)
    old = db.session.scalars(
        sa.select(_file.c.token).where(_file.c.seq == 0, _file.c.created_at < limit).distinct()
    ).all()
    stale = [token for token in old if token not in kept]
    if stale:
        db.session.execute(sa.delete(_file).where(_file.c.token.in_(stale)))
        db.session.commit()
    return [PREFIX + token for token in stale]
