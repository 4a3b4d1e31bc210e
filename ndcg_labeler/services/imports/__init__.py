"""The one import use case (web and CLI): parse whole files, then write in one transaction."""

from .parse import MAX_SOURCE, ImportFile, ImportReport, import_files

__all__ = ["MAX_SOURCE", "ImportFile", "ImportReport", "import_files"]
