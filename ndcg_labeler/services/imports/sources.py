"""Remember the corpus file an --only-referenced import read, to fetch what it left out later.

A file read from a path (the CLI) is remembered by its absolute path, the machine's name, its
size and its sha256, hashed in a thread while the import reads it (hashlib releases the GIL,
so on a second core it costs the import nothing). A browser or API upload is a spooled file,
deleted after the job: nothing can be fetched from it later, so it is remembered without a
path, only to say so when a run names a chunk it left out. An import that keeps every chunk
of a file forgets it: nothing is left to fetch.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import socket
import threading
from collections.abc import Callable

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import CorpusSource, TestSet, utcnow

READ_SIZE = 1 << 20
REPORT_BYTES = 16 << 20
"""How often (in bytes hashed) file_digest calls its `report`: a 6 GB corpus takes ~10 s."""


def _hash(path: str, keep_going: Callable[[int], bool]) -> str | None:
    """The file's sha256, or None when `keep_going(bytes read so far)` said stop (raises
    OSError); `keep_going` is called after every READ_SIZE read."""
    digest = hashlib.sha256()
    buffer = bytearray(READ_SIZE)
    view = memoryview(buffer)
    done = 0
    with open(path, "rb", buffering=0) as stream:
        while keep_going(done):
            n = stream.readinto(buffer)
            if not n:
                return digest.hexdigest()
            digest.update(view[:n])
            done += n
    return None


class FileDigest:
    """sha256 and size of a file, hashed in a thread from now on; `result()` waits for it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._before = os.stat(path)
        self._sha256: str | None = None
        self._error: OSError | None = None
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._sha256 = _hash(self.path, lambda _done: not self._stop)
        except OSError as exc:
            self._error = exc

    def stop(self) -> None:
        """Stop hashing (the import failed) and wait for the thread."""
        self._stop = True
        self._thread.join()

    def result(self) -> tuple[int, str] | None:
        """(size, sha256) of the file, or None when it changed (or vanished) while hashed."""
        self._thread.join()
        try:
            after = os.stat(self.path)
        except OSError:
            return None
        before = self._before
        if self._error is not None or self._sha256 is None:
            return None
        if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
            return None
        return after.st_size, self._sha256


def file_digest(path: str, report: Callable[[int, int], None] | None = None) -> tuple[int, str]:
    """(size, sha256) of the file at `path`, read now in this thread (raises OSError).

    `report(done, size)` is called every REPORT_BYTES: a fetch's progress, which may raise
    (Cancelled) to stop the minute-long read of a large corpus."""
    before = os.stat(path)
    reported = 0

    def keep_going(done: int) -> bool:
        nonlocal reported
        if report is not None and done - reported >= REPORT_BYTES:
            reported = done
            report(done, before.st_size)
        return True

    sha256 = _hash(path, keep_going)
    after = os.stat(path)
    if sha256 is None or (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise OSError(f"{path} changed while it was read")
    return after.st_size, sha256


def import_command(test_set: TestSet, path: str | None) -> str:
    """The command that imports the corpus again and remembers it (FILE when unknown)."""
    where = shlex.quote(path) if path else "FILE"
    return f"flask testset import {shlex.quote(test_set.name)} --corpus {where} --only-referenced"


def _forget_earlier(test_set_id: int, filename: str, path: str | None) -> None:
    """Forget the test set's earlier records of this file: the same path, or (an upload, or a
    file moved) the same name that was uploaded or is gone from its path on this machine."""
    table = CorpusSource.__table__
    same = table.c.filename == filename
    if path is not None:
        same = same | (table.c.path == path)
    host = socket.gethostname()[:255]
    for row in db.session.scalars(
        sa.select(CorpusSource).where(table.c.test_set_id == test_set_id, same)
    ):
        moved = row.filename == filename and (
            row.path is None or (row.host == host and not os.path.exists(row.path))
        )
        if moved or (path is not None and row.path == path):
            db.session.delete(row)


def remember(
    test_set: TestSet,
    filename: str,
    path: str | None,
    digest: FileDigest | None,
    left_out: int,
) -> str | None:
    """Record what an import of a corpus file left out (inside its transaction); returns the
    report's line about it (None when it kept every chunk: nothing to remember)."""
    name = os.path.basename(filename)[:300] or "corpus"
    _forget_earlier(test_set.id, name, path)
    if left_out == 0:
        if digest is not None:
            digest.stop()
        return None
    found = digest.result() if digest is not None else None
    size, sha256 = found if found is not None else (None, None)
    db.session.add(
        CorpusSource(
            test_set_id=test_set.id,
            filename=name,
            path=path,
            host=socket.gethostname()[:255],
            size=size,
            sha256=sha256,
            left_out=left_out,
            imported_at=utcnow(),
        )
    )
    again = import_command(test_set, path)
    if path is None:
        return (
            f"corpus not kept: an uploaded file is deleted after the import, so the {left_out} "
            "chunks left out cannot be fetched when a run names them; import it again with only "
            "the referenced chunks then, or from the command line, which remembers the file "
            f"({again})"
        )
    if sha256 is None:
        # Recorded all the same, so that a run naming a left-out chunk says what to do.
        return (
            f"corpus not remembered: {path} changed while it was imported, so the {left_out} "
            f"chunks left out cannot be fetched later; import it again ({again})"
        )
    return (
        f"corpus remembered: the {left_out} chunks left out are fetched from {path} when a run "
        "names them (while the file stays unchanged)"
    )
