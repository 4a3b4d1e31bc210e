"""Process-wide knobs of the numeric libraries, applied by the entry points before they load.

pyarrow, numpy and OpenBLAS read these environment variables once, when they are first
imported, so an entry point calls `apply()` before anything imports them: `app.py` (for
`gunicorn app:app` and `flask --app app`) and the command line (`ndcg_labeler.cli`, which
Flask loads first in every `flask` process). Importing the package changes nothing. A value
already in the environment wins over ours.
"""

from __future__ import annotations

import os

KNOBS = {
    # pyarrow allocates from the C library's heap (shared with numpy and Python, so memory one
    # frees the other reuses) instead of its bundled mimalloc. A 7,000 x 1,000 `run upload` +
    # `run score`: median 3.60 -> 3.06 s, and far steadier (bench/README).
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    # numpy asks for transparent huge pages for every array of 4 MB or more; on first touch the
    # kernel then zeroes 2 MB at a time, compacting memory to find them. A run's parser reserves
    # its arrays whole (formats.filled) and fills them a batch at a time: with huge pages that
    # made the upload slower, not faster (bench/README, "Seventh session").
    "NUMPY_MADVISE_HUGEPAGE": "0",
    # OpenBLAS (under numpy and scipy) starts a thread per core when it loads, and they spin for
    # a while: ~0.1 s of CPU taken from every process that imports numpy, the other core's share
    # of a run upload included. Nothing here multiplies matrices large enough to gain from them.
    "OPENBLAS_NUM_THREADS": "1",
}


def apply() -> None:
    """Set every knob the environment does not set already (call before numpy/pyarrow load)."""
    for name, value in KNOBS.items():
        os.environ.setdefault(name, value)
