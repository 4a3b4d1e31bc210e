"""The sha256 of an upload's bytes, as uploaded (gzip included), taken while it is parsed."""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, TypeVar

T = TypeVar("T")


def read_hashed(raw: BinaryIO, read: Callable[[BinaryIO], T]) -> tuple[T, str]:
    """`read(stream)` over `raw`, and the sha256 of raw's bytes from where it stands to its end.

    A real file (a path, a spooled upload) is hashed by a thread reading it by descriptor while
    `read` parses; any other stream is hashed as `read` takes its bytes.
    """
    background = _background_digest(raw)
    if background is None:
        reader = _HashingReader(raw)
        result = read(reader)  # type: ignore[arg-type]
        return result, reader.hexdigest()
    try:
        result = read(raw)
    except BaseException:
        background.stop()
        raise
    return result, background.hexdigest()


class _HashingReader(io.RawIOBase):
    """Passes a binary stream through, hashing every byte once even if the parser rewinds."""

    def __init__(self, inner: BinaryIO) -> None:
        self._inner = inner
        self._start = inner.tell() if inner.seekable() else 0
        self._pos = self._start
        self._hashed_to = self._start
        self.sha256 = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return bool(self._inner.seekable())

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._pos = self._inner.seek(offset, whence)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        data = self._inner.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        # Only bytes past the furthest point hashed so far are new (the parser may re-read).
        if self._pos + n > self._hashed_to and self._pos <= self._hashed_to:
            self.sha256.update(memoryview(data)[self._hashed_to - self._pos :])
            self._hashed_to = self._pos + n
        self._pos += n
        return n

    def hexdigest(self) -> str:
        """sha256 of the whole stream (reads whatever the parser left unread)."""
        if self._pos < self._hashed_to:
            self.seek(self._hashed_to)
        while self.read(1 << 20):
            pass
        return self.sha256.hexdigest()


class _BackgroundDigest:
    """sha256 of a file from `start` to its end, hashed in a thread while the parser reads.

    os.pread leaves the file offset alone, and hashlib releases the GIL on large buffers, so
    hashing overlaps parsing instead of adding to it.
    """

    def __init__(self, fd: int, start: int) -> None:
        self._digest: str | None = None
        self._error: OSError | None = None
        self._cancelled = False
        self._thread = threading.Thread(target=self._run, args=(fd, start), daemon=True)
        self._thread.start()

    def _run(self, fd: int, offset: int) -> None:
        digest = hashlib.sha256()
        # One buffer read into again and again: a new 4 MB object per read would cost its
        # pages' faults every time.
        view = memoryview(bytearray(1 << 22))
        try:
            while not self._cancelled:
                n = _read_at(fd, view, offset)
                if not n:
                    self._digest = digest.hexdigest()
                    return
                digest.update(view[:n])
                offset += n
        except OSError as exc:
            self._error = exc

    def hexdigest(self) -> str:
        """The digest (waits for the thread)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._digest is not None
        return self._digest

    def stop(self) -> None:
        """Stop early (the upload failed) and wait, so the file can be closed safely."""
        self._cancelled = True
        self._thread.join()


def _read_at(fd: int, view: memoryview, offset: int) -> int:
    """Read into `view` from `offset` of `fd`, leaving the file offset alone (pread)."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [view], offset)
    data = os.pread(fd, len(view), offset)  # an OS without preadv
    view[: len(data)] = data
    return len(data)


def _background_digest(raw: BinaryIO) -> _BackgroundDigest | None:
    """A background digest for a real file (paths, spooled uploads); None for memory streams."""
    try:
        fd = raw.fileno()
        start = raw.tell()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return None
    return _BackgroundDigest(fd, start)
