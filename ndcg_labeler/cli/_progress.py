"""A progress bar on stderr for the long CLI commands, drawn only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from ndcg_labeler.services import Progress, no_progress

WIDTH = 30
LABELS = {"parse": "reading", "write": "writing", "rank": "ranking", "store": "storing",
          "corpus": "corpus", "plan": "choosing pairs", "pool": "adding pairs", "fuse": "fusing",
          "index": "indexing the corpus", "search": "searching", "verify": "checking",
          "refetch": "fetching"}  # fmt: skip


def wants_bar(stream: TextIO | None) -> bool:
    """Draw a bar only on a terminal, so that piped or JSON output stays clean."""
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False


class Bar:
    """progress(phase, done, total, rows) drawn as one rewritten line, at most 10 times a second."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self._last = 0.0
        self._drawn = False

    def __call__(self, phase: str, done: int, total: int, rows: int) -> None:
        now = time.monotonic()
        if now - self._last < 0.1 and done < total:
            return
        self._last = now
        fraction = done / total if total else 0.0
        filled = int(WIDTH * fraction)
        rate = rows / (now - self.started) if rows and now > self.started else 0
        line = (
            f"\r{LABELS.get(phase, phase):8} [{'#' * filled}{'-' * (WIDTH - filled)}] "
            f"{100 * fraction:5.1f}%  {rows:,} rows  {rate:,.0f} rows/s"
        )
        self.stream.write(line)
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the bar's line."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()


@contextmanager
def terminal_progress(stream: TextIO | None = None) -> Iterator[Progress]:
    """A Bar on stderr when it is a terminal, else the silent callback."""
    stream = stream if stream is not None else sys.stderr
    if not wants_bar(stream):
        yield no_progress
        return
    bar = Bar(stream)
    try:
        yield bar
    finally:
        bar.close()
