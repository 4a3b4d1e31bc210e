"""Backups of the SQLite database (online backup API) and their restore; PostgreSQL: pg_dump."""

from .sqlite import PG_HINT, backup, check_backup_file, database_path, is_empty, restore

__all__ = ["PG_HINT", "backup", "check_backup_file", "database_path", "is_empty", "restore"]
