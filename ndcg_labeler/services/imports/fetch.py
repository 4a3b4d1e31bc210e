"""Fetch the chunks a new run names from the corpus files --only-referenced imports left out.

Called inside the run upload's transaction (every way a run is stored: CLI, browser, API, job,
fusion), with the docids the run ranks that no chunk with text has. Each remembered file of the
test set that still has chunks left out is checked first: there at its path, the same size and
the same sha256 as when it was imported (a full read, ~1.5 s a GB; the scan itself is slower).
A file that is gone or has changed is not read; the report says so and which docids are still
missing, and asks for the corpus again. An unchanged file is streamed as an import streams it
(services/imports/corpus.py), keeping only the wanted docids, so memory stays bounded whatever
its size; the file was checked whole when it was imported, so no line is checked again.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from flask import current_app

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Chunk, CorpusSource, TestSet
from ndcg_labeler.services._progress import Progress, ReadProgress, no_progress, size_of
from ndcg_labeler.services.imports.corpus import CorpusStream
from ndcg_labeler.services.imports.sources import file_digest, import_command
from ndcg_labeler.services.tallies import lock_pool_counts

BATCH = 5000
PHASE = "refetch"
"""The progress phase of reading a remembered corpus file (jobs.reporting.PHASES)."""
CHECK = "verify"
"""The progress phase of hashing it first, to know it is unchanged (bytes, like PHASE)."""


@dataclass
class Fetched:
    """What fetching did: one entry per remembered file looked at, and the chunks fetched."""

    test_set: TestSet
    entries: list[dict[str, Any]] = field(default_factory=list)
    fetched: int = 0

    def report(self, lacking: dict[str, Any]) -> list[dict[str, Any]]:
        """The entries with a `message` each, and a `brief` one for those who may view the run
        but not import a corpus (no server path, host or command); `lacking`: the run's
        docids_not_in_corpus as it stands after the fetch (count, examples)."""
        count = int(lacking.get("count", 0))
        examples = ", ".join(lacking.get("examples", []))
        still = (
            f"{count} docid{'' if count == 1 else 's'} the run names "
            f"{'is' if count == 1 else 'are'} still missing (e.g. {examples})"
            if count
            else "no docid the run names is missing"
        )
        out = []
        for entry in self.entries:
            name, path, status = entry["file"], entry["path"], entry["status"]
            if status == "fetched":
                n = entry["fetched"]
                message = f"{n} chunk{'' if n == 1 else 's'} fetched from {name}"
                if n == 0:
                    message += ": none of the docids the test set lacks is among those it left out"
                brief = message
            else:
                host = entry["host"]
                where = (
                    f" on this machine; it was read on {host}" if host and host != _host() else ""
                )
                why = {
                    "gone": f"{name} is gone (no file at {path}{where})",
                    "changed": f"{name} has changed since it was imported ({path})",
                    "not_kept": f"{name} was uploaded, not read from a path, so it was not kept",
                }[status]
                again = import_command(self.test_set, path if status == "changed" else None)
                ask = f"; import the corpus again: {again}" if count else ""
                message = f"{why}: nothing fetched from it; {still}{ask}"
                brief = f"{name} {_BRIEF[status]}: nothing fetched from it; {still}"
                if count:
                    brief += "; an admin can import the corpus again"
            out.append({**entry, "message": message, "brief": brief})
        return out


_BRIEF = {
    "gone": "is no longer where it was imported from",
    "changed": "has changed since it was imported",
    "not_kept": "was uploaded, not read from a path, so it was not kept",
}


def _host() -> str:
    """This machine's name, as sources.remember records it."""
    return socket.gethostname()[:255]


def _status(source: CorpusSource, progress: Progress) -> str:
    """fetch when the file is there and unchanged; else gone, changed or not_kept.

    Hashing a large file takes a while (~1 s a GB): `progress` hears of it (phase CHECK, bytes)
    and may cancel it."""
    if source.path is None:
        return "not_kept"
    if not os.path.isfile(source.path):
        return "gone"
    try:
        if source.sha256 is None or os.path.getsize(source.path) != source.size:
            return "changed"
        found = file_digest(source.path, lambda done, size: progress(CHECK, done, size, 0))
        return "fetch" if found == (source.size, source.sha256) else "changed"
    except OSError:
        return "gone"


def _still_lacking(test_set_id: int, wanted: set[str]) -> set[str]:
    """The wanted docids that no chunk with text of the test set has (BATCH at a time)."""
    table = Chunk.__table__
    names = list(wanted)
    left: set[str] = set()
    for begin in range(0, len(names), BATCH):
        batch = names[begin : begin + BATCH]
        have = set(
            db.session.scalars(
                sa.select(table.c.docid).where(
                    table.c.test_set_id == test_set_id,
                    table.c.docid.in_(batch),
                    table.c.text.is_not(None),
                )
            )
        )
        left.update(docid for docid in batch if docid not in have)
    return left


def _read(test_set_id: int, source: CorpusSource, wanted: set[str], progress: Progress) -> int:
    """Stream the file, writing the wanted docids' chunks; returns how many it held."""
    assert source.path is not None
    rows = 0

    def report(phase: str, done: int, total: int, found: int) -> None:
        # The stream's own reports ("corpus") come per block of chunks kept, and a few wanted
        # ids make no block until the end: the bytes read ("parse", every 4 MiB) say how far
        # the scan is and let a cancel stop it. Both are this phase's.
        nonlocal rows
        rows = max(rows, found)
        progress(PHASE if phase in ("corpus", "parse") else phase, done, total, rows)

    max_bytes = int(current_app.config["NDCG_MAX_DECOMPRESSED_BYTES"])
    with open(source.path, "rb") as stream:
        read = ReadProgress(stream, report, size_of(stream))
        stream_writer = CorpusStream(test_set_id, source.filename, report, wanted=wanted)
        counts = stream_writer.write(read, max_bytes, []).counts
    return counts.created + counts.updated


def fetch_named(
    test_set: TestSet, wanted: Callable[[], list[str]], progress: Progress = no_progress
) -> Fetched:
    """Fetch the docids `wanted()` lists (the run's, lacking text) from the test set's
    remembered corpus files, newest first, inside the caller's transaction.

    `wanted` is called only when some file still has chunks left out."""
    result = Fetched(test_set)
    table = CorpusSource.__table__
    sources = db.session.scalars(
        sa.select(CorpusSource)
        .where(table.c.test_set_id == test_set.id, table.c.left_out > 0)
        .order_by(table.c.imported_at.desc(), table.c.id.desc())
    ).all()
    # A set (~100 bytes a docid): the corpus is searched for every id it holds.
    names = set(wanted()) if sources else set()
    if not names:
        return result
    locked = False
    for position, source in enumerate(sources):
        if not names:
            break
        status = _status(source, progress)  # reads the whole file for its sha256: before any lock
        if status == "fetch" and not locked:
            # An import takes this lock first for its whole transaction: a fetch waits for it
            # rather than racing it to insert the same docid (nothing was written before it).
            lock_pool_counts(test_set.id)
            locked = True
        entry: dict[str, Any] = {
            "file": source.filename,
            "path": source.path,
            "host": source.host,
            "fetched": 0,
        }
        if status == "fetch":
            progress(PHASE, 0, 1, 0)
            n = _read(test_set.id, source, names, progress)
            entry.update(status="fetched", fetched=n)
            source.left_out = max(source.left_out - n, 0)
            result.fetched += n
            if n and position + 1 < len(sources):
                names = _still_lacking(test_set.id, names)
        else:
            entry["status"] = status
        result.entries.append(entry)
    return result
