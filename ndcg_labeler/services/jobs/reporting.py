"""A job's progress callback: records progress and heartbeat, and stops a cancelled job; and
the Heartbeat thread that keeps a running job's heartbeat fresh between reports.

It writes through a connection of its own, outside the import's transaction, so the job page
sees progress while the work is still uncommitted. On SQLite the import holds the single write
lock while it stores rows: the callback then waits at most a moment and keeps the report (and
the heartbeat) in the queue's own storage instead, which web and worker share, until the row
can be written again (reading the cancel flag still works in WAL mode).
"""

from __future__ import annotations

import logging
import threading
import time
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from flask import current_app
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
HEARTBEAT_MAX_SECONDS = 30.0
"""The longest pause between two heartbeats of a running job (Heartbeat)."""
CANCEL_POLL_SECONDS = 1.0
"""How often the Heartbeat looks for a cancel, for work that waits without reporting."""
LOCK_WAIT_MS = 200
"""How long a report or heartbeat waits for SQLite's write lock before it goes to the queue."""

_log = logging.getLogger(__name__)


def _write_row(conn: Any, job_id: int, values: dict[str, Any]) -> bool:
    """Write the values to the running job's row through `conn`; False when the database
    refused (on SQLite: the write lock, held by the job's own import)."""
    table = Job.__table__
    try:
        with conn.begin():
            conn.execute(
                sa.update(table)
                .where(table.c.id == job_id, table.c.state == "running")
                .values(**values)
            )
    except OperationalError:
        return False
    return True


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
        self.latest: dict[str, Any] | None = None  # the latest report, for the Heartbeat
        self.note = ""  # said after every phase's message (a warning the whole job holds)
        # Set once a cancel is seen, by a report or by the Heartbeat: what `_progress.pause`
        # waits on, so a job waiting out a rate limit stops at once.
        self.stopped = threading.Event()

    def _connection(self) -> Any:
        if self._conn is None:
            self._conn = db.engine.connect()
            sqlite.set_busy_timeout(self._conn, LOCK_WAIT_MS)
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
            "message": PHASES.get(phase, phase) + (f" — {self.note}" if self.note else ""),
        }
        self.latest = values
        if now >= self._blocked_until and not _write_row(conn, self.job_id, values):
            self._blocked_until = now + BLOCKED_BACKOFF
        if now < self._blocked_until and conn.dialect.name == "sqlite":
            # The row is locked by the job's own import: keep the report in the queue, which
            # the job page, the API and recovery read beside the row (records.with_progress).
            queue.keep_progress(self.job_id, values)
        self._check_cancel(conn)

    def _check_cancel(self, conn: Any) -> None:
        """Raise Cancelled once a user asked to cancel the job."""
        if self.look_for_cancel(conn):
            raise Cancelled("cancelled by a user")

    def look_for_cancel(self, conn: Any) -> bool:
        """Whether a user asked to cancel the job (then `stopped` is set), through `conn`."""
        table = Job.__table__
        cancel = conn.execute(
            sa.select(table.c.cancel_requested).where(table.c.id == self.job_id)
        ).scalar()
        conn.rollback()
        # SQLite: also the queue's flag, a cancel asked while the import's write lock kept the
        # job's row (records.cancel).
        if cancel or (conn.dialect.name == "sqlite" and queue.cancel_asked(self.job_id)):
            self.stopped.set()
        return self.stopped.is_set()


def heartbeat_interval(stale_seconds: float) -> float:
    """Seconds between two heartbeats: five within the stale time, at most every 30 s (and at
    least 0.1 s apart, so a stale time of 0 set by mistake does not spin on the database)."""
    return max(min(stale_seconds / 5, HEARTBEAT_MAX_SECONDS), 0.1)


class Heartbeat:
    """While a job runs (`with Heartbeat(...)`), a daemon thread of its worker keeps the job's
    heartbeat fresh, so recovery takes a job for dead when its worker is gone, not when one
    step (a long final commit, a slow CREATE INDEX, a big scoring pass) outlasts
    NDCG_JOB_STALE_SECONDS without a progress report.

    It writes the way progress does: to the row through a connection of its own, waiting at
    most a moment for SQLite's write lock, and else to the queue's storage beside the row
    (with the job's latest report, which the pages lay over the row). Best effort: a beat
    that fails is logged and the next one tries again; the job never waits for it. A daemon
    thread dies with its process, so a killed worker stops beating.

    Every CANCEL_POLL_SECONDS it also looks for a cancel and sets the progress's `stopped`,
    which ends a wait of the job's (`_progress.pause`) that no report would interrupt.
    """

    def __init__(self, job_id: int, progress: JobProgress | None, interval: float) -> None:
        self.job_id = job_id
        self.progress = progress
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Heartbeat:
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._run, args=(app,), name=f"job-{self.job_id}-heartbeat", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            # A beat takes a moment; one stuck on an unreachable queue is left behind (its row
            # write needs a running job, which the job's end is about to change).
            self._thread.join(timeout=5)

    def _run(self, app: Any) -> None:
        with app.app_context():
            conn = None
            beat_at = time.monotonic() + self.interval
            try:
                while not self._stop.wait(min(self.interval, CANCEL_POLL_SECONDS)):
                    try:
                        if conn is None:
                            conn = db.engine.connect()
                            sqlite.set_busy_timeout(conn, LOCK_WAIT_MS)
                        if self.progress is not None and not self.progress.stopped.is_set():
                            self.progress.look_for_cancel(conn)
                        if time.monotonic() >= beat_at:
                            beat_at = time.monotonic() + self.interval
                            self._beat(conn)
                    except Exception:  # a heartbeat must never fail the job
                        _log.warning(
                            "job %s: could not refresh its heartbeat", self.job_id, exc_info=True
                        )
                        if conn is not None:
                            conn.invalidate()
                            conn.close()
                            conn = None
            finally:
                if conn is not None:
                    sqlite.set_busy_timeout(conn)
                    conn.close()

    def _beat(self, conn: Any) -> None:
        """Refresh the heartbeat in the row, or, locked out of it on SQLite, in the queue."""
        latest = self.progress.latest if self.progress is not None else None
        beat = {"heartbeat_at": utcnow()}
        # With the latest report: the row (or the queue's copy) that takes the newest
        # heartbeat is the one shown, so it must carry the newest progress too.
        if _write_row(conn, self.job_id, {**(latest or {}), **beat}):
            return
        if conn.dialect.name != "sqlite":
            return  # only SQLite's lock keeps the row from it; the next beat tries again
        report = latest or self._row_report(conn)
        if report is not None:
            queue.keep_progress(self.job_id, {**report, **beat})

    def _row_report(self, conn: Any) -> dict[str, Any] | None:
        """The report in the job's row (readable under the write lock), None once it ended."""
        table = Job.__table__
        names = ("phase", "done", "total", "rows", "phase_started_at", "message")
        row = conn.execute(
            sa.select(*(table.c[name] for name in names)).where(
                table.c.id == self.job_id, table.c.state == "running"
            )
        ).first()
        conn.rollback()
        return dict(row._mapping) if row is not None else None


def warn_from_start(progress: Any, phase: str, warnings: list[str]) -> None:
    """Say the warnings in the job's progress message from now on, and report `phase` at once
    so they show before the first answer (a run whose every request goes without a key says
    so while it runs, not only when it ends). Not a job's progress (the CLI's): nothing."""
    if not warnings or not isinstance(progress, JobProgress):
        return
    progress.note = "warning: " + "; ".join(warnings)
    progress(phase, 0, 0, 0)
