"""Backups of the SQLite database (online backup API) and their restore; PostgreSQL: pg_dump."""

from .sqlite import backup, restore

__all__ = [
    "backup",
    "restore",
]
