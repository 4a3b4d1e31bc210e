"""The one import use case (web and CLI): parse whole files, then write in one transaction."""

from .parse import ImportFile, ImportReport, import_files

__all__ = ["ImportFile", "ImportReport", "import_files"]
