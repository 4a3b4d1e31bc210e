"""Background jobs: enqueue long imports and uploads, report progress, cancel, list, recover."""

from .enqueue import (
    enqueue_bm25,
    enqueue_fetch,
    enqueue_fuse,
    enqueue_import,
    enqueue_ir_dataset,
    enqueue_judge,
    enqueue_pool,
    enqueue_probe,
    enqueue_upload,
)
from .kinds import title
from .queue import storage_url, worker
from .records import can_see, cancel, figures, get_job, is_finished, list_jobs, stopping
from .recovery import recover
from .reporting import PHASES
from .schedules import tick
from .spool import is_spooled, stream_size, threshold_bytes

__all__ = [
    "PHASES",
    "can_see",
    "cancel",
    "enqueue_bm25",
    "enqueue_fetch",
    "enqueue_fuse",
    "enqueue_import",
    "enqueue_ir_dataset",
    "enqueue_judge",
    "enqueue_pool",
    "enqueue_probe",
    "enqueue_upload",
    "figures",
    "get_job",
    "is_finished",
    "is_spooled",
    "list_jobs",
    "recover",
    "stopping",
    "storage_url",
    "stream_size",
    "threshold_bytes",
    "tick",
    "title",
    "worker",
]
