"""The client's view of the server's background jobs: one job's state, and waiting for it."""

from __future__ import annotations

import time
from typing import Any

from ndcg_labeler.client.wire import ClientError, Connection


class Jobs(Connection):
    """A job's state and progress, and waiting until it ends."""

    def job(self, job_id: int) -> dict[str, Any]:
        """A job's state and progress (phase, done, total, rows) and, once ended, its result."""
        return self._get(f"jobs/{int(job_id)}")

    def wait_for_job(
        self, job_id: int, *, poll: float = 1.0, timeout: float | None = None
    ) -> dict[str, Any]:
        """Poll the job until it ends; the job when done, ClientError when it failed, was
        cancelled or `timeout` seconds passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            found = self.job(job_id)
            if found["state"] == "done":
                return found
            if found["finished"]:
                why = found.get("error") or found.get("message") or found["state"]
                raise ClientError(f"job {job_id} {found['state']}: {why}", None, found)
            wait = poll
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    late = (
                        f"job {job_id} is still {found['state']} after the timeout of {timeout} s"
                    )
                    raise ClientError(late, None, found)
                wait = min(poll, left)  # a long poll must not carry the wait past the timeout
            time.sleep(wait)
