"""Uploaded files a job will read, spooled under instance/uploads/<token>/ until it ends."""

from __future__ import annotations

import os
import secrets
import shutil
from typing import BinaryIO

from flask import current_app

_CHUNK = 1 << 20


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
    """Copy each (filename, stream) to uploads/<token>/<field>/<filename>; returns the folder."""
    folder = os.path.join(current_app.instance_path, "uploads", secrets.token_hex(12))
    for field, (filename, stream) in files.items():
        name = os.path.basename(filename.replace("\\", "/")) or "upload"
        os.makedirs(os.path.join(folder, field), exist_ok=True)
        with open(os.path.join(folder, field, name), "wb") as out:
            shutil.copyfileobj(stream, out, _CHUNK)
    return folder


def spooled(folder: str, field: str) -> tuple[str, str] | None:
    """(path, filename) of the file spooled for `field`, or None when none was."""
    directory = os.path.join(folder, field)
    if not os.path.isdir(directory):
        return None
    names = os.listdir(directory)
    return (os.path.join(directory, names[0]), names[0]) if names else None


# A folder younger than this may belong to an upload whose job row is not committed yet.
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
    """Delete the spooled folders no waiting or running job will read (`keep`: theirs), once
    untouched for `grace` seconds: left by a worker killed between ending its job and deleting
    its files, or by a server killed between spooling an upload and creating its job."""
    root = os.path.join(current_app.instance_path, "uploads")
    if not os.path.isdir(root):
        return []
    kept = {os.path.realpath(path) for path in keep}
    removed = []
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
