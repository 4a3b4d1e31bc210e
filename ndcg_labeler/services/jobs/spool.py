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
