"""The client's files in and out: runs uploaded, test-set files and peers' files imported
(ir_datasets' and, with `background`, any of them through the server's job worker), and the
exports in the peers' shapes."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, BinaryIO

from ndcg_labeler.client.jobs import Jobs
from ndcg_labeler.client.trec_run import run_file
from ndcg_labeler.client.wire import ClientError, ref

# Asks the server to answer 202 with a job at once (RFC 7240) instead of working in the request.
_BACKGROUND = {"Prefer": "respond-async"}

PEER_FORMATS = ("quepid", "srw-judgments", "srw-queries")
"""Peers' files a test set imports and exports: Quepid judgments CSV, OpenSearch Search
Relevance Workbench judgment list and query set."""


class Files(Jobs):
    """Uploads, imports and exports of one server (admins, except the exports)."""

    def upload_run(
        self,
        test_set: str | int,
        run: str | os.PathLike[str] | Mapping[str, Mapping[str, float]] | Any,
        name: str | None = None,
        *,
        depth: int | None = None,
        notes: str = "",
        series: str | None = None,
        quepid_snapshot: bool = False,
        background: bool = False,
        wait: bool = True,
        poll: float = 1.0,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Upload a run (admins): a file path (any format the server reads), a dict
        {qid: {docid: score}} (ranx/pytrec_eval), or a pandas DataFrame with columns qid, docid,
        score; with `quepid_snapshot`, the path of a Quepid case snapshot CSV (queries named by
        their text); `series` names the series it joins. Returns the stored run with its
        validation report.

        `background`: the server's job worker stores it (a large run, past the web server's
        timeout); with `wait` this polls the job and returns the run as above with "job"
        beside it, else {"job": {...}} at once."""
        if quepid_snapshot and background:
            raise ClientError("a Quepid snapshot is read in the request: no background")
        filename, stream = run_file(run, name)
        data = {"name": name or "", "notes": notes}
        if series:
            data["series"] = series
        if depth is not None:
            data["depth"] = str(depth)
        if quepid_snapshot:
            data["format"] = "quepid-snapshot"
        with stream:
            answer = self._send(
                "post",
                f"testsets/{ref(test_set)}/runs",
                data=data,
                files={"file": (filename, stream)},
                headers=_BACKGROUND if background else None,
            )
        if "job" not in answer or not wait:
            return answer
        done = self.wait_for_job(answer["job"]["id"], poll=poll, timeout=timeout)
        result = done.get("result") or {}
        found = self._get(f"testsets/{ref(test_set)}/runs", params={"q": result["run_name"]})
        run = next(r for r in found["runs"] if r["name"] == result["run_name"])
        return {**run, "report": result.get("report"), "job": done}

    def import_files(
        self,
        test_set: str | int,
        *,
        queries: str | os.PathLike[str] | None = None,
        corpus: str | os.PathLike[str] | None = None,
        pool: str | os.PathLike[str] | None = None,
        qrels: str | os.PathLike[str] | None = None,
        source: str | None = None,
        only_referenced: bool = False,
        background: bool = False,
        wait: bool = True,
        poll: float = 1.0,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Import files into the test set (admins), all or nothing; returns the report
        ({"report", "files", "nothing_new", "message"}). `only_referenced`: keep only the
        corpus chunks the pools, qrels and runs name. `background`: the server's job worker
        imports them (a corpus of millions of chunks, past the web server's timeout); with
        `wait` this polls the job and returns the report with "job" beside it, else
        {"job": {...}} at once."""
        given = {k: v for k, v in (("queries", queries), ("corpus", corpus), ("pool", pool),
                                   ("qrels", qrels)) if v is not None}  # fmt: skip
        if not given:
            raise ClientError("give at least one of queries, corpus, pool, qrels")
        opened = {kind: open(path, "rb") for kind, path in given.items()}  # noqa: SIM115
        try:
            files = {
                kind: (os.path.basename(os.fspath(given[kind])), f) for kind, f in opened.items()
            }
            data = {"source": source} if source else {}
            if only_referenced:
                data["only_referenced"] = "true"
            answer = self._post_import(test_set, data, files, background)
        finally:
            for handle in opened.values():
                handle.close()
        return self._imported(answer, wait, poll, timeout)

    def import_peer(
        self,
        test_set: str | int,
        file: str | os.PathLike[str] | BinaryIO,
        fmt: str = "quepid",
        *,
        rating_map: str | None = None,
        source: str | None = None,
        background: bool = False,
        wait: bool = True,
        poll: float = 1.0,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Import a peer's file (admins), all or nothing: fmt "quepid" (judgments CSV),
        "srw-judgments" (SRW judgment list) or "srw-queries" (SRW query set). `rating_map`
        maps the peer's ratings onto the set's grades ('0-10' or '1=0,2=1'). Returns the
        import report ({"report": [...], "files": [...]}); `background`, `wait`: as for
        import_files."""
        if fmt not in PEER_FORMATS:
            raise ClientError(f"fmt must be one of {', '.join(PEER_FORMATS)}, not '{fmt}'")
        data = {k: v for k, v in (("rating_map", rating_map), ("source", source)) if v}
        filename, stream, mine = _opened(file, f"{fmt}.upload")
        try:
            files = {fmt.replace("-", "_"): (filename, stream)}
            answer = self._post_import(test_set, data, files, background)
        finally:
            if mine:
                stream.close()
        return self._imported(answer, wait, poll, timeout)

    def import_ir_dataset(
        self,
        test_set: str | int,
        name: str,
        *,
        source: str | None = None,
        wait: bool = True,
        poll: float = 1.0,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Import ir_datasets' NAME from the server's local cache (admins). A large dataset is
        imported by the server's job worker: with `wait` this polls the job every `poll`
        seconds until it ends and returns its report ({"report", "files", "job"}); else it
        returns {"job": {...}} at once (follow it with job(id) or wait_for_job(id)). A failed
        or cancelled job raises ClientError."""
        data = {"ir_datasets": name, **({"source": source} if source else {})}
        answer = self._send("post", f"testsets/{ref(test_set)}/import", data=data)
        return self._imported(answer, wait, poll, timeout)

    def _post_import(
        self, test_set: str | int, data: dict[str, str], files: dict[str, Any], background: bool
    ) -> dict[str, Any]:
        """The import request's answer; `background` asks the server for a job at once."""
        return self._send(
            "post",
            f"testsets/{ref(test_set)}/import",
            data=data,
            files=files,
            headers=_BACKGROUND if background else None,
        )

    def _imported(
        self, answer: dict[str, Any], wait: bool, poll: float, timeout: float | None
    ) -> dict[str, Any]:
        """An import's answer; a job's, once it ends (with `wait`), in the same shape."""
        if "job" not in answer or not wait:
            return answer
        done = self.wait_for_job(answer["job"]["id"], poll=poll, timeout=timeout)
        result = done.get("result") or {}
        # The report's shape as when the server imports it at once, and the job beside it.
        return {
            "report": result.get("lines", []),
            "files": result.get("files", []),
            "nothing_new": result.get("nothing_new", False),
            "message": result.get("message"),
            "job": done,
        }

    def export(
        self,
        test_set: str | int,
        fmt: str = "quepid",
        *,
        aggregation: str | None = None,
        to: str | os.PathLike[str] | None = None,
    ) -> str:
        """The test set in a peer's shape (fmt in PEER_FORMATS), its grades as scoring uses
        them (`aggregation`: another policy); the text, also written to the path `to`."""
        params = {"format": fmt, **({"aggregation": aggregation} if aggregation else {})}
        return _save(self._text(f"testsets/{ref(test_set)}/export", params), to)

    def export_run(
        self, test_set: str | int, run: str | int, *, to: str | os.PathLike[str] | None = None
    ) -> str:
        """The run as a Quepid case snapshot CSV; the text, also written to the path `to`."""
        path = f"testsets/{ref(test_set)}/runs/{ref(run)}/export"
        return _save(self._text(path, {"format": "quepid-snapshot"}), to)


def _opened(file: Any, fallback: str) -> tuple[str, BinaryIO, bool]:
    """(file name, binary stream, whether this opened it) of a path or an open binary file."""
    if isinstance(file, str | os.PathLike):
        return os.path.basename(os.fspath(file)), open(file, "rb"), True
    if hasattr(file, "read"):
        return os.path.basename(str(getattr(file, "name", "") or fallback)), file, False
    raise ClientError("a file is a path or an open binary file")


def _save(text: str, to: str | os.PathLike[str] | None) -> str:
    """The text, written (UTF-8) to `to` first when a path is given."""
    if to is not None:
        with open(to, "w", encoding="utf-8", newline="") as out:
            out.write(text)
    return text
