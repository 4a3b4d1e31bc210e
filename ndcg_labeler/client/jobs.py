"""The client's view of the server's background jobs: one job's state, waiting for it and
cancelling it."""

from __future__ import annotations

import time
from typing import Any

from ndcg_labeler.client.wire import ClientError, Connection


class Jobs(Connection):
    """A job's state and progress, waiting until it ends, and cancelling it."""

    def job(self, job_id: int) -> dict[str, Any]:
        """A job's state and progress (phase, done, total, rows) and, once ended, its result."""
        return self._get(f"jobs/{int(job_id)}")

    def cancel_job(self, job_id: int) -> dict[str, Any]:
        """Cancel the job (one's own; an admin's: any), as its page's Cancel does: a queued one
        is "cancelled" at once, a running one answers "stopping": true and stops at its next
        step; ClientError (409) when it had already ended."""
        return self._send("post", f"jobs/{int(job_id)}/cancel")

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
                    raise ClientError(late + _last_words(found), None, found)
                wait = min(poll, left)  # a long poll must not carry the wait past the timeout
            time.sleep(wait)


def _last_words(found: dict[str, Any]) -> str:
    """What the job last said of itself (its message, else its phase and progress), to name in
    a timeout's error; empty when it said nothing."""
    said = found.get("message") or found.get("phase_text") or found.get("phase")
    if not said:
        return ""
    done, total = found.get("done"), found.get("total")
    progress = f" ({done} of {total})" if done is not None and total else ""
    return f"; its last message: {said}{progress}"
