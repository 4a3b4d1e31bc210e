"""Which of a run's ranked docids the test set's corpus lacks (the upload report), and the
docids the stored runs rank (a corpus import keeping only referenced chunks)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import decode_docids
from ndcg_labeler.models import Chunk, Run, RunQuery
from ndcg_labeler.services._db import select_rows

EXAMPLES = 5


def docids_not_in_corpus(test_set_id: int, blobs: Sequence[memoryview | bytes]) -> dict[str, Any]:
    """Distinct docids (count, examples) and ranked entries of the stored run that name no
    chunk with text in the test set: they stay in the run, unjudged, and pooling skips them.

    `blobs` are the stored rows, each query's docids joined by newlines. "corpus" says how many
    chunks with text the test set has (0: no corpus was imported, so every docid is lacking).
    """
    return lacking_docids(test_set_id, blobs)[0]


def lacking_docids(
    test_set_id: int, blobs: Sequence[memoryview | bytes]
) -> tuple[dict[str, Any], Callable[[], list[str]]]:
    """docids_not_in_corpus's summary, and a function listing every such docid (for a fetch
    from the remembered corpus files: made into Python strings only when asked)."""
    # pyarrow only when a run is stored (~50 ms to import): start-up stays light.
    import pyarrow as pa
    import pyarrow.compute as pc

    tokens = _newline_ended(pa, [b for b in blobs if len(b)])
    chunk = Chunk.__table__
    rows = select_rows(
        sa.select(chunk.c.docid).where(
            chunk.c.test_set_id == test_set_id, chunk.c.text.is_not(None)
        )
    )
    # Both sides newline-ended, as the run's tokens come out of its stored rows.
    corpus = pa.array([r[0] + "\n" for r in rows], pa.large_string())
    # Distinct docids first (pc.unique keeps first-seen order): the corpus is probed once each,
    # then the entries are matched against the few lacking ones only.
    distinct = pc.unique(tokens)
    missing = distinct.filter(pc.invert(pc.is_in(distinct, value_set=corpus)))
    entries = pc.sum(pc.is_in(tokens, value_set=missing)).as_py() if len(missing) else 0
    summary = {
        "count": len(missing),
        "entries": int(entries or 0),
        "examples": [d[:-1] for d in missing.slice(0, EXAMPLES).to_pylist()],
        "corpus": len(corpus),
    }
    return summary, lambda: [d[:-1] for d in missing.to_pylist()]


def _newline_ended(pa: Any, blobs: list[memoryview | bytes]) -> Any:
    """Every docid of the rows as one large_string array, each token keeping its newline
    (cut at the newlines found by numpy: faster than pyarrow's split on millions)."""
    data = b"\n".join(bytes(b) for b in blobs) + b"\n" if blobs else b""
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    offsets = np.zeros(ends.size + 1, dtype=np.int64)
    offsets[1:] = ends + 1
    return pa.LargeStringArray.from_buffers(ends.size, pa.py_buffer(offsets), pa.py_buffer(data))


def run_docids(test_set_id: int) -> Iterator[list[str]]:
    """The docids every stored run of the test set ranks, one query's list at a time (memory
    stays that of one list, whatever the runs' size)."""
    rows = db.session.execute(
        sa.select(RunQuery.docids)
        .join(Run, Run.id == RunQuery.run_id)
        .where(Run.test_set_id == test_set_id),
        execution_options={"yield_per": 200},
    )
    for (blob,) in rows:
        text = decode_docids(blob)
        if text:
            yield text.decode().split("\n")
