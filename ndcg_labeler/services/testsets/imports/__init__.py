"""The one import use case (web and CLI): parse whole files, then write in one transaction."""

from .parse import (
    MAX_QID,
    MAX_DOCID,
    MAX_SOURCE,
    ImportFile,
    ImportReport,
    import_files,
)

__all__ = [
    "ImportFile",
    "ImportReport",
    "MAX_DOCID",
    "MAX_QID",
    "MAX_SOURCE",
    "import_files",
]
