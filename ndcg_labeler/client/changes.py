"""The client's changes an admin makes: archiving and tagging runs, a machine judge's settings
and its audit sample."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ndcg_labeler.client.wire import Connection, ref


class Changes(Connection):
    """Runs archived and tagged, judges' settings and audit samples (admins)."""

    def archive_run(self, test_set: str | int, run: str | int, keep: int) -> dict[str, Any]:
        """Archive the run to its top `keep` entries per query (admins); the run, with
        "entries_dropped"."""
        path = f"testsets/{ref(test_set)}/runs/{ref(run)}/archive"
        return self._send("post", path, json={"keep": keep})

    def tag_run(
        self,
        test_set: str | int,
        run: str | int,
        *,
        add: Iterable[str] = (),
        remove: Iterable[str] = (),
        pinned: bool | None = None,
    ) -> dict[str, Any]:
        """Add and remove the run's tags and pin or unpin it (admins); the run as it is now."""
        body: dict[str, Any] = {"add": list(add), "remove": list(remove)}
        if pinned is not None:
            body["pinned"] = pinned
        return self._send("post", f"testsets/{ref(test_set)}/runs/{ref(run)}/tags", json=body)

    def judge_settings(self, judge: str | int, **settings: Any) -> dict[str, Any]:
        """Change a machine judge's base_url, concurrency, timeout or requests_per_minute
        (admins); {"judge", "changed": {name: [old, new]}, "settings"}."""
        return self._send("post", f"judges/{ref(judge)}/settings", json=settings)

    def audit_sample(self, test_set: str | int, judge: str | int) -> dict[str, Any]:
        """The judge's audit sample in the test set: seed, sampled qids, which are audited."""
        return self._get(f"testsets/{ref(test_set)}/judges/{ref(judge)}/audit")

    def draw_audit(
        self,
        test_set: str | int,
        judge: str | int,
        queries: int,
        *,
        seed: int | None = None,
        reseed: bool = False,
    ) -> dict[str, Any]:
        """Draw (or extend to) an audit sample of `queries` queries for the judge (admins), as
        `flask judges audit`; the sample as audit_sample gives it."""
        body: dict[str, Any] = {"queries": queries, "reseed": reseed}
        if seed is not None:
            body["seed"] = seed
        return self._send("post", f"testsets/{ref(test_set)}/judges/{ref(judge)}/audit", json=body)
