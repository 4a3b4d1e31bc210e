"""Background jobs: enqueue long imports and uploads, report progress, cancel, list, recover."""

from .enqueue import (
    enqueue_fetch,
    enqueue_fuse,
    enqueue_import,
    enqueue_judge,
    enqueue_pool,
    enqueue_upload,
)
from .kinds import IMPORT_FIELDS, title
from .queue import (
    get_queue,
    storage_url,
    worker,
)
from .records import (
    Figures,
    can_see,
    cancel,
    create_job,
    figures,
    get_job,
    is_finished,
    list_jobs,
    require_job,
)
from .recovery import INTERRUPTED, recover
from .reporting import PHASES, JobProgress
from .runner import run_job
from .spool import stream_size, threshold_bytes

__all__ = [
    "IMPORT_FIELDS",
    "INTERRUPTED",
    "PHASES",
    "Figures",
    "JobProgress",
    "can_see",
    "cancel",
    "create_job",
    "enqueue_fetch",
    "enqueue_fuse",
    "enqueue_import",
    "enqueue_judge",
    "enqueue_pool",
    "enqueue_upload",
    "figures",
    "get_job",
    "get_queue",
    "is_finished",
    "list_jobs",
    "recover",
    "require_job",
    "run_job",
    "storage_url",
    "stream_size",
    "threshold_bytes",
    "title",
    "worker",
]
