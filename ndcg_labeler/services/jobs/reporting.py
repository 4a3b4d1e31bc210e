"""A job's progress callback: records progress and heartbeat, and stops a cancelled job.

It writes through a connection of its own, outside the import's transaction, so the job page
sees progress while the work is still uncommitted. On SQLite the import holds the single write
lock while it stores rows: the callback then waits at most a moment and keeps the report (and
the heartbeat) in the queue's own storage instead, which web and worker share, until the row
can be written again (reading the cancel flag still works in WAL mode).
"""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from ndcg_labeler import sqlite
from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, utcnow
from ndcg_labeler.services._progress import Cancelled
from ndcg_labeler.services.jobs import queue

PHASES = {
    "parse": "reading the files",
    "read": "reading the dataset",
    "write": "writing records",
    "corpus": "reading and writing the corpus",
    "index": "indexing the corpus",
    "verify": "checking that the corpus file is unchanged",
    "refetch": "fetching the chunks the run names from the corpus file",
    "rank": "ranking",
    "store": "storing ranked lists",
    "judge": "asking the judge",
    "probe": "asking the judge about altered passages",
    "fetch": "asking the endpoint",
    "plan": "choosing the pairs",
    "pool": "adding pairs to the queue",
    "fuse": "fusing the runs",
}
INTERVAL = 0.5
"""Seconds between two recorded reports (the callback is called far more often)."""
BLOCKED_BACKOFF = 5.0
"""Seconds without trying to record again after a report found the database locked (SQLite,
the import holding the write lock): each try waits the busy timeout, which every half second
would slow a long corpus import by a third. The cancel flag is still read at every report, and
the report is kept in the queue's storage meanwhile (queue.keep_progress)."""


class JobProgress:
    """progress(phase, done, total, rows) for one job; raises Cancelled once it is cancelled."""

    def __init__(self, job_id: int, interval: float = INTERVAL) -> None:
        self.job_id = job_id
        self.interval = interval
        self._last = 0.0
        self._phase = ""
        self._phase_started = utcnow()
        self._conn: Any = None
        self._blocked_until = 0.0
        self.rows = 0  # the latest rows reported, recorded when the job ends

    def _connection(self) -> Any:
        if self._conn is None:
            self._conn = db.engine.connect()
            sqlite.set_busy_timeout(self._conn, 200)
        return self._conn

    def close(self) -> None:
        """Return the connection (restoring SQLite's usual busy timeout)."""
        if self._conn is not None:
            sqlite.set_busy_timeout(self._conn)
            self._conn.close()
            self._conn = None

    def __call__(self, phase: str, done: int, total: int, rows: int) -> None:
        """Record the report (at most every `interval` s, or at a new phase); maybe cancel."""
        self.rows = rows
        now = time.monotonic()
        new_phase = phase != self._phase
        if not new_phase and now - self._last < self.interval:
            return
        self._last = now
        conn = self._connection()
        beat = utcnow()
        if new_phase:
            self._phase = phase
            self._phase_started = beat
        values: dict[str, Any] = {
            "phase": phase,
            "done": done,
            "total": total,
            "rows": rows,
            "heartbeat_at": beat,
            "phase_started_at": self._phase_started,
            "message": PHASES.get(phase, phase),
        }
        if now >= self._blocked_until:
            try:
                with conn.begin():
                    conn.execute(
                        sa.update(Job.__table__)
                        .where(Job.__table__.c.id == self.job_id)
                        .values(**values)
                    )
            except OperationalError:
                self._blocked_until = now + BLOCKED_BACKOFF
        if now < self._blocked_until and conn.dialect.name == "sqlite":
            # The row is locked by the job's own import: keep the report in the queue, which
            # the job page, the API and recovery read beside the row (records.with_progress).
            queue.keep_progress(self.job_id, values)
        self._check_cancel(conn)

    def _check_cancel(self, conn: Any) -> None:
        """Raise Cancelled once a user asked to cancel the job."""
        table = Job.__table__
        cancel = conn.execute(
            sa.select(table.c.cancel_requested).where(table.c.id == self.job_id)
        ).scalar()
        conn.rollback()
        # SQLite: also the queue's flag, a cancel asked while the import's write lock kept the
        # job's row (records.cancel).
        if cancel or (conn.dialect.name == "sqlite" and queue.cancel_asked(self.job_id)):
            raise Cancelled("cancelled by a user")
