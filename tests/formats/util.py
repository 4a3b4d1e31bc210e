"""Helpers for the format tests: in-memory uploads, gzip, BOM and CRLF variants."""

from __future__ import annotations

import gzip
import io

from tests.paths import CONFORMANCE  # noqa: F401  (re-exported to the format tests)


def upload(text: str | bytes, *, gz: bool = False, bom: bool = False, crlf: bool = False):
    """Return a BytesIO holding `text`, optionally with CRLF endings, a BOM and gzip."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    if bom:
        data = b"\xef\xbb\xbf" + data
    if gz:
        data = gzip.compress(data)
    return io.BytesIO(data)


class OneWay(io.RawIOBase):
    """A stream that cannot seek, like a socket or a pipe."""

    def __init__(self, data: bytes) -> None:
        self._inner = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        return self._inner.readinto(b)
