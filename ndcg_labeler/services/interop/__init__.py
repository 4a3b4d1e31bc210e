"""Interop with Quepid, OpenSearch's Search Relevance Workbench and ir_datasets."""

from .exports import (
    EXPORT_FORMATS,
    GRADED_EXPORTS,
    export_run_snapshot,
    export_test_set,
    judgment_rows,
)
from .irds import import_ir_dataset, ir_dataset_size
from .peers import (
    NOTHING_NEW,
    PEER_FORMATS,
    import_peer,
    native_files,
    nothing_new_message,
    text_qid,
    upload_quepid_snapshot,
)

__all__ = [
    "EXPORT_FORMATS",
    "GRADED_EXPORTS",
    "NOTHING_NEW",
    "PEER_FORMATS",
    "export_run_snapshot",
    "export_test_set",
    "import_ir_dataset",
    "import_peer",
    "ir_dataset_size",
    "judgment_rows",
    "native_files",
    "nothing_new_message",
    "text_qid",
    "upload_quepid_snapshot",
]
