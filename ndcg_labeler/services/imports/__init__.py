"""The one import use case (web and CLI): parse whole files, then write in one transaction;
and fetching, when a run names them, the chunks an --only-referenced import left out."""

from .fetch import fetch_named
from .parse import MAX_SOURCE, ImportFile, ImportReport, import_files

__all__ = ["MAX_SOURCE", "ImportFile", "ImportReport", "fetch_named", "import_files"]
