"""Progress reporting for long services: a callback every N rows that may also cancel the work.

The long services (test set imports, run uploads) take a `progress` callable and call it with
(phase, done, total, rows): `done` of `total` units of the current phase (bytes read while
parsing, records written while storing) and `rows`, the records handled so far. A job's
callback records this and raises Cancelled when the job was cancelled; the CLI's draws a bar.
Because every service writes in one transaction, a Cancelled raised anywhere leaves nothing.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, BinaryIO

from ndcg_labeler.formats import size_of as size_of  # re-exported for the services

Progress = Callable[[str, int, int, int], None]
"""progress(phase, done, total, rows); may raise Cancelled."""

EVERY_ROWS = 5000
"""How often (in rows) the row loops call their progress callback."""

_EVERY_BYTES = 4 * 1024 * 1024


class Cancelled(Exception):
    """Raised by a progress callback when the work was cancelled; nothing is written."""


def no_progress(phase: str, done: int, total: int, rows: int) -> None:
    """The default callback: report nothing, never cancel."""


# The running job's stop event, set when a user cancels it. Work that waits (a judge obeying a
# provider's Retry-After, a rate limit of our own) reports no progress while it waits, so it
# would notice a Cancel only when the wait ends, minutes later: `pause` notices it at once.
_stop: ContextVar[threading.Event | None] = ContextVar("ndcg_stop", default=None)


@contextmanager
def stop_on(event: threading.Event) -> Iterator[None]:
    """Within it, `pause` raises Cancelled as soon as `event` is set (in this thread, and in
    threads that run a copy of this context)."""
    token = _stop.set(event)
    try:
        yield
    finally:
        _stop.reset(token)


def raise_if_stopped() -> None:
    """Raise Cancelled if the work's stop event is set (before starting another request)."""
    stop = _stop.get()
    if stop is not None and stop.is_set():
        raise Cancelled("cancelled by a user")


def pause(seconds: float) -> None:
    """Sleep `seconds`; raise Cancelled at once if the work's stop event is or becomes set."""
    stop = _stop.get()
    if stop is None:
        time.sleep(max(seconds, 0.0))
    elif stop.wait(max(seconds, 0.0)):
        raise Cancelled("cancelled by a user")


def position(source: Any) -> int:
    """Bytes consumed so far of a file object (0 for paths and streams without tell)."""
    try:
        return int(source.tell())
    except (AttributeError, OSError, ValueError):
        return 0


class ReadProgress(io.RawIOBase):
    """Passes a binary file through and reports the bytes read (phase "parse") every 4 MiB.

    fileno/tell/seek are the file's own, so callers that hash the file by descriptor or rewind
    it keep working.
    """

    def __init__(self, inner: BinaryIO, progress: Progress, total: int) -> None:
        self._inner = inner
        self._progress = progress
        self._total = total
        self._reported = -_EVERY_BYTES

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return bool(self._inner.seekable())

    def fileno(self) -> int:
        return self._inner.fileno()

    def tell(self) -> int:
        return self._inner.tell()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._inner.seek(offset, whence)

    def readinto(self, buffer: Any) -> int:
        data = self._inner.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        done = self._inner.tell()
        if done - self._reported >= _EVERY_BYTES or n == 0:
            self._reported = done
            self._progress("parse", min(done, self._total), self._total, 0)
        return n
