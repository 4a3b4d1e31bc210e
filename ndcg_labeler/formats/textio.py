"""Open an upload or path as text: gunzip by magic bytes, size guard, BOM, UTF-8, line numbers."""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO, cast

from .errors import FormatError

Source = BinaryIO | str | os.PathLike[str]
"""What every reader accepts: a binary stream (left open) or a filesystem path."""

DEFAULT_MAX_BYTES = 2 * 1024**3
DEFAULT_MAX_LINE_BYTES = 64 * 1024**2
HEAD_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
_BUFFER = 1024 * 1024


@dataclass
class Opened:
    """A decompressed, size-guarded, BOM-free binary stream plus its first bytes for sniffing."""

    stream: BinaryIO
    head: bytes
    filename: str
    gzipped: bool


def display_name(source: Source, filename: str | None) -> str:
    """Return the name to use in error messages for `source`."""
    if filename:
        return filename
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) and name else "<input>"


def size_of(source: object) -> int:
    """Size in bytes of a path or a file-backed stream (0 when unknown)."""
    if isinstance(source, str | os.PathLike):
        return os.path.getsize(source)
    try:
        return os.fstat(source.fileno()).st_size  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return 0


def _human(n: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


class _Chain(io.RawIOBase):
    """Replays `head` and then continues with `rest` (which may lack readinto)."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = memoryview(head)
        self._pos = 0
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:
        if self._pos < len(self._head):
            n = min(len(b), len(self._head) - self._pos)
            b[:n] = self._head[self._pos : self._pos + n]
            self._pos += n
            return n
        readinto = getattr(self._rest, "readinto", None)
        if readinto is not None:
            return readinto(b)
        data = self._rest.read(len(b))
        b[: len(data)] = data
        return len(data)


class _Guarded(io.RawIOBase):
    """Counts the bytes read through it and stops past `max_bytes`; maps gzip damage to errors."""

    def __init__(self, inner: BinaryIO, filename: str, max_bytes: int, gzipped: bool) -> None:
        self._inner = inner
        self._filename = filename
        self._max = max_bytes
        self._gz = gzipped
        self._total = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:
        try:
            n = self._inner.readinto(b)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            if not self._gz:
                raise
            raise FormatError(self._filename, None, f"corrupt gzip data: {exc}") from exc
        self._total += n
        if self._total > self._max:
            what = "decompressed size" if self._gz else "file size"
            raise FormatError(self._filename, None, f"{what} exceeds {_human(self._max)}")
        return n


@contextmanager
def open_source(
    source: Source, filename: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[Opened]:
    """Open `source` for reading: gunzip if it starts with 1f 8b, guard the size, drop a BOM."""
    name = display_name(source, filename)
    owned = isinstance(source, str | os.PathLike)
    raw: BinaryIO = open(source, "rb") if owned else source  # noqa: SIM115
    try:
        magic = raw.read(2) or b""
        inner: BinaryIO = cast(BinaryIO, _Chain(magic, raw))
        gzipped = magic == GZIP_MAGIC
        if gzipped:
            inner = cast(BinaryIO, gzip.GzipFile(fileobj=inner, mode="rb"))
        guarded = cast(
            BinaryIO, io.BufferedReader(_Guarded(inner, name, max_bytes, gzipped), _BUFFER)
        )
        head = guarded.read(HEAD_BYTES)
        if head.startswith(UTF8_BOM):
            head = head[len(UTF8_BOM) :]
        check_text(head, name)
        stream = cast(BinaryIO, io.BufferedReader(_Chain(head, guarded), _BUFFER))
        yield Opened(stream, head, name, gzipped)
    finally:
        if owned:
            raw.close()


# Magic numbers of files people pick by mistake, to say what the file is.
_MAGIC = (
    (b"PK\x03\x04", "a ZIP archive (an .xlsx or .docx is one too)"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"PAR1", "a Parquet file"),
    (b"SQLite format 3", "an SQLite database"),
    (b"BZh", "a bzip2 archive"),
    (b"\xfd7zXZ", "an xz archive"),
    (b"7z\xbc\xaf", "a 7-Zip archive"),
)


# Bytes that text is made of: everything but the C0 controls other than tab, LF, CR, FF.
_TEXT_BYTES = bytes(b for b in range(256) if b >= 0x20 or b in (0x09, 0x0A, 0x0C, 0x0D))


def check_text(head: bytes, filename: str) -> None:
    """Refuse a binary file with one message, whatever it was uploaded as.

    Binary means a known binary magic number, or a first KiB of which a tenth or more (and
    at least four bytes) is control bytes (NUL and the like; UTF-16 text is half NULs). A
    stray NUL in a text line and text in another encoding are not binary: they get their
    line-precise errors later.
    """
    kind = next((what for magic, what in _MAGIC if head.startswith(magic)), None)
    start = head[:1024]
    controls = len(start.translate(None, _TEXT_BYTES))
    if kind is None and controls >= 4 and controls * 10 >= len(start):
        kind = "binary data"
    if kind is not None:
        reason = f"this is {kind}, not a text file; upload UTF-8 text (gzip is fine)"
        raise FormatError(filename, None, reason)


def first_line(head: bytes, *, skip_hash: bool = False) -> str | None:
    """Return the first non-blank line of `head` (for format sniffing), or None.

    With `skip_hash`, lines starting with '#' are passed over: they are not comments to
    trec_eval, so the parser will reject them, but they must not decide the format.
    """
    fallback = None
    for raw in head.split(b"\n"):
        text = raw.decode("utf-8", errors="replace").strip()
        if text and not (skip_hash and text.startswith("#")):
            return text
        fallback = fallback or text or None
    return fallback


def _checked_blocks(opened: Opened, max_line_bytes: int) -> Iterator[tuple[int, bytes]]:
    """Yield `(lines_before, block)` of whole lines (the last may lack its LF).

    Each block is checked for UTF-8 and NUL once, so the per-line work stays small.
    """
    filename = opened.filename
    read = opened.stream.read
    before = 0
    pending = b""
    while True:
        chunk = read(_BUFFER)
        data = pending + chunk if pending else chunk
        if not chunk:
            if data:
                _check_block(data, before, filename)
                yield before, data
            return
        cut = data.rfind(b"\n") + 1
        pending = data[cut:]
        if len(pending) > max_line_bytes:
            line = before + data.count(b"\n", 0, cut) + 1
            raise FormatError(filename, line, f"line is longer than {_human(max_line_bytes)}")
        if cut:
            block = data[:cut]
            _check_block(block, before, filename)
            yield before, block
            before += block.count(b"\n")


def line_blocks(opened: Opened) -> Iterator[tuple[int, bytes]]:
    """Yield `(lines_before, block)` of whole lines (UTF-8 and NUL checked), streaming."""
    return _checked_blocks(opened, DEFAULT_MAX_LINE_BYTES)


def _check_block(block: bytes, before: int, filename: str) -> None:
    """Reject invalid UTF-8 and NUL bytes, naming the line and byte."""
    if not block.isascii():
        try:
            block.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = before + block.count(b"\n", 0, exc.start) + 1
            column = exc.start - block.rfind(b"\n", 0, exc.start)
            reason = f"invalid UTF-8 at byte {column} of the line"
            raise FormatError(filename, line, reason) from None
    nul = block.find(b"\x00")
    if nul >= 0:
        line = before + block.count(b"\n", 0, nul) + 1
        raise FormatError(filename, line, "line contains a NUL character")


def _raw_lines(block: bytes) -> list[bytes]:
    """Lines of a block without their LF and a CRLF's CR (a bare CR stays)."""
    if b"\r" in block:
        block = block.replace(b"\r\n", b"\n")
        if block.endswith(b"\r"):  # the file's last line, without LF
            block = block[:-1]
    lines = block.split(b"\n")
    if not lines[-1]:
        lines.pop()
    return lines


def _text_lines(block: bytes, keepends: bool) -> list[str]:
    """Decoded lines of a block; with `keepends` each keeps its line ending."""
    text = block.decode("utf-8")
    if keepends:
        parts = text.split("\n")
        last = parts.pop()
        return [part + "\n" for part in parts] + ([last] if last else [])
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if text.endswith("\r"):
            text = text[:-1]
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()
    return lines


def _check_lengths(lines: list[bytes] | list[str], before: int, filename: str, limit: int) -> None:
    """Reject a line longer than `limit` (only needed when a block is longer than that)."""
    for line_no, line in enumerate(lines, before + 1):
        if len(line) > limit:
            raise FormatError(filename, line_no, f"line is longer than {_human(limit)}")


def iter_raw_lines(
    opened: Opened, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[int, bytes]]:
    """Yield `(line_no, bytes)` per line (valid UTF-8, no NUL, LF and a CRLF's CR removed)."""
    for before, block in _checked_blocks(opened, max_line_bytes):
        lines = _raw_lines(block)
        if len(block) > max_line_bytes:
            _check_lengths(lines, before, opened.filename, max_line_bytes)
        yield from enumerate(lines, before + 1)


def iter_lines(
    opened: Opened, *, keepends: bool = False, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[int, str]]:
    """Yield `(line_no, text)` for every line (split on LF only; CRLF's CR dropped), streaming.

    With `keepends` the line ending is kept as in the file (what the csv module wants).
    """
    for before, block in _checked_blocks(opened, max_line_bytes):
        lines = _text_lines(block, keepends)
        if len(block) > max_line_bytes:
            _check_lengths(lines, before, opened.filename, max_line_bytes)
        yield from enumerate(lines, before + 1)
