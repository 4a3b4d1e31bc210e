"""A Python client for the HTTP API, for notebooks and CI: httpx only, pandas when it is there.

    from ndcg_labeler.client import Client
    api = Client("https://ndcg.example.org", token="...")
    api.upload_run("Help desk", {"q1": {"doc-7": 12.5, "doc-3": 9.1}}, name="bm25-v2")
    per_query = api.scores("Help desk", "bm25-v2", measures=["nDCG@10"])

Importing this module needs neither Flask nor SQLAlchemy (nor anything else of the server):
it talks to a running server. Every failure the server reports raises `ClientError` with the
server's own message.
"""

from __future__ import annotations

import io
import math
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO

import httpx

__all__ = ["PEER_FORMATS", "Client", "ClientError"]

_COPY = "copy it again from the Account page"
_OWN_ADDRESS = "give Client the server's own address (https, or the path the app is served under)"

PEER_FORMATS = ("quepid", "srw-judgments", "srw-queries")
"""Peers' files a test set imports and exports: Quepid judgments CSV, OpenSearch Search
Relevance Workbench judgment list and query set."""


class ClientError(Exception):
    """What the server (or the connection) refused, with the server's message and status."""

    def __init__(self, message: str, status: int | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.details = details


class Client:
    """The API of one ndcg-labeler server, authenticated with a personal token."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """`url`: the server's base address; `token`: from its Account page (or NDCG_TOKEN)."""
        # Stripped: a token read from a file or `$(cat ...)` often keeps its line break.
        token = (token or os.environ.get("NDCG_TOKEN") or "").strip()
        if not token:
            raise ClientError("give a personal API token (the Account page), or set NDCG_TOKEN")
        if any(c.isspace() or not c.isprintable() for c in token):  # never echoed: a secret
            raise ClientError(f"the API token has a blank or a line break inside: {_COPY}")
        self._http = httpx.Client(
            base_url=url.rstrip("/") + "/api/",
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ------------------------------------------------------------------------------

    def test_sets(self) -> list[dict[str, Any]]:
        """The test sets the token may see: id, name, scale, sizes."""
        return self._get("testsets")["test_sets"]

    def runs(self, test_set: str | int, **filters: Any) -> list[dict[str, Any]]:
        """The test set's runs, oldest first, each with its mean NDCG@10 and 95% interval.

        `filters`: the list's q, tag, archived and sort; every page is fetched in turn.
        """
        out: list[dict[str, Any]] = []
        page: int | None = 1
        while page is not None:
            found = self._get(f"testsets/{_ref(test_set)}/runs", params={**filters, "page": page})
            out.extend(found["runs"])
            page = found.get("next_page")
        return out

    def qrels(self, test_set: str | int, *, as_frame: bool | None = None) -> Any:
        """The grades scoring uses: {qid: {docid: grade}} (pytrec_eval's and ranx's shape), or a
        DataFrame with columns qid, docid, grade when pandas is installed and `as_frame` is not
        False."""
        grades = self._get(f"testsets/{_ref(test_set)}/qrels")["qrels"]
        if not _want_frame(as_frame):
            return grades
        import pandas as pd

        rows = [(q, d, g) for q, docs in grades.items() for d, g in docs.items()]
        return pd.DataFrame(rows, columns=["qid", "docid", "grade"])

    def scores(
        self,
        test_set: str | int,
        run: str | int,
        measures: Iterable[str] = ("nDCG@10",),
        labels: str = "human",
        *,
        as_frame: bool | None = None,
        **options: Any,
    ) -> Any:
        """Per-query values of `measures` under `labels` (human, machine:JUDGE, fill:JUDGE,
        ppi:JUDGE). Measures are named the ir_measures way (`nDCG@10`, `P(rel=2)@5`, `AP`,
        `R@100`, `RR@10`, `Rprec`, `bpref`, `infAP`, `Success@10`, `Judged@10`, `NumRel`,
        `NumRet`) or trec_eval's (`ndcg_cut_10`, `P_5`, `map`, ...); the server checks them.

        Returns {qid: {measure: value}}, or a DataFrame indexed by qid with one column per
        measure when pandas is installed and `as_frame` is not False. `options` are the scores
        endpoint's other parameters (gain, ideal, judged_only, aggregation).
        """
        names = list(measures)
        if not names:
            raise ClientError("name at least one measure, e.g. measures=['nDCG@10']")
        # One request for every measure: the server reads the run and its grades once.
        answer = self._get(
            f"testsets/{_ref(test_set)}/runs/{_ref(run)}/scores",
            params={"labels": labels, **_params(options), "measure": names},
        )
        values: dict[str, dict[str, float | None]] = {}
        for row in answer["queries"]:
            found = row.get("measures", {})
            values[str(row["qid"])] = {name: found.get(name) for name in names}
        if not _want_frame(as_frame):
            return values
        import pandas as pd

        frame = pd.DataFrame.from_dict(values, orient="index", columns=names)
        frame.index.name = "qid"
        return frame

    def score_summary(
        self,
        test_set: str | int,
        run: str | int,
        k: int = 10,
        labels: str = "human",
        **options: Any,
    ) -> dict[str, Any]:
        """The whole answer of the scores endpoint (mean, n, interval, per query), as JSON."""
        return self._get(
            f"testsets/{_ref(test_set)}/runs/{_ref(run)}/scores",
            params={"k": k, "labels": labels, **_params(options)},
        )

    def compare(
        self,
        test_set: str | int,
        a: str | int,
        b: str | int,
        k: int = 10,
        labels: str = "human",
        **options: Any,
    ) -> dict[str, Any]:
        """Run `b` against run `a`: per-query differences, the paired tests and intervals."""
        return self._get(
            f"testsets/{_ref(test_set)}/compare",
            params={"a": str(a), "b": str(b), "k": k, "labels": labels, **_params(options)},
        )

    # -- writing ------------------------------------------------------------------------------

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
    ) -> dict[str, Any]:
        """Upload a run (admins): a file path (any format the server reads), a dict
        {qid: {docid: score}} (ranx/pytrec_eval), or a pandas DataFrame with columns qid, docid,
        score; with `quepid_snapshot`, the path of a Quepid case snapshot CSV (queries named by
        their text); `series` names the series it joins. Returns the stored run with its
        validation report."""
        filename, stream = _run_file(run, name)
        data = {"name": name or "", "notes": notes}
        if series:
            data["series"] = series
        if depth is not None:
            data["depth"] = str(depth)
        if quepid_snapshot:
            data["format"] = "quepid-snapshot"
        with stream:
            return self._send(
                "post",
                f"testsets/{_ref(test_set)}/runs",
                data=data,
                files={"file": (filename, stream)},
            )

    def import_files(
        self,
        test_set: str | int,
        *,
        queries: str | os.PathLike[str] | None = None,
        corpus: str | os.PathLike[str] | None = None,
        pool: str | os.PathLike[str] | None = None,
        qrels: str | os.PathLike[str] | None = None,
        source: str | None = None,
    ) -> dict[str, Any]:
        """Import files into the test set (admins), all or nothing; returns the report."""
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
            return self._send("post", f"testsets/{_ref(test_set)}/import", data=data, files=files)
        finally:
            for handle in opened.values():
                handle.close()

    def import_peer(
        self,
        test_set: str | int,
        file: str | os.PathLike[str] | BinaryIO,
        fmt: str = "quepid",
        *,
        rating_map: str | None = None,
        source: str | None = None,
    ) -> dict[str, Any]:
        """Import a peer's file (admins), all or nothing: fmt "quepid" (judgments CSV),
        "srw-judgments" (SRW judgment list) or "srw-queries" (SRW query set). `rating_map`
        maps the peer's ratings onto the set's grades ('0-10' or '1=0,2=1'). Returns the
        import report ({"report": [...], "files": [...]})."""
        if fmt not in PEER_FORMATS:
            raise ClientError(f"fmt must be one of {', '.join(PEER_FORMATS)}, not '{fmt}'")
        data = {k: v for k, v in (("rating_map", rating_map), ("source", source)) if v}
        filename, stream, mine = _opened(file, f"{fmt}.upload")
        try:
            files = {fmt.replace("-", "_"): (filename, stream)}
            return self._send("post", f"testsets/{_ref(test_set)}/import", data=data, files=files)
        finally:
            if mine:
                stream.close()

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
        answer = self._send("post", f"testsets/{_ref(test_set)}/import", data=data)
        if "job" not in answer or not wait:
            return answer
        done = self.wait_for_job(answer["job"]["id"], poll=poll, timeout=timeout)
        result = done.get("result") or {}
        # The report's shape as when the server imports it at once, and the job beside it.
        return {"report": result.get("lines", []), "files": result.get("files", []), "job": done}

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
        return _save(self._text(f"testsets/{_ref(test_set)}/export", params), to)

    def export_run(
        self, test_set: str | int, run: str | int, *, to: str | os.PathLike[str] | None = None
    ) -> str:
        """The run as a Quepid case snapshot CSV; the text, also written to the path `to`."""
        path = f"testsets/{_ref(test_set)}/runs/{_ref(run)}/export"
        return _save(self._text(path, {"format": "quepid-snapshot"}), to)

    def gate(
        self,
        test_set: str | int,
        baseline: str | int,
        candidate: str | int,
        measures: Iterable[str] | None = None,
        *,
        max_drop: float | None = None,
        alpha: float | None = None,
        labels: str = "human",
    ) -> dict[str, Any]:
        """The release gate's verdict as JSON ("outcome": pass, fail or inconclusive)."""
        body: dict[str, Any] = {
            "baseline": str(baseline),
            "candidate": str(candidate),
            "labels": labels,
        }
        if measures is not None:
            body["measure"] = list(measures)
        if max_drop is not None:
            body["max_drop"] = max_drop
        if alpha is not None:
            body["alpha"] = alpha
        return self._send("post", f"testsets/{_ref(test_set)}/gate", json=body)

    # -- the wire -----------------------------------------------------------------------------

    def _get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._send("get", path, params=params)

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The server's response, or ClientError when the connection fails or times out."""
        try:
            return self._http.request(method, path, **kwargs)
        except (httpx.ReadTimeout, httpx.WriteTimeout) as exc:  # reached but slow: not "down"
            raise ClientError(
                f"the server did not answer within {self._http.timeout.read} s "
                f"({type(exc).__name__}): it may still be working; give Client a larger timeout="
            ) from exc
        except httpx.HTTPError as exc:
            raise ClientError(f"could not reach the server: {exc}") from exc

    def _text(self, path: str, params: dict[str, Any]) -> str:
        """A download's text; the server's JSON error as ClientError."""
        response = self._request("get", path, params=params)
        if response.is_error or response.is_redirect:
            _raise(response)
        return response.text

    def _send(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self._request(method, path, **kwargs)
        if response.is_error or response.is_redirect:
            _raise(response)
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise ClientError("the server's answer is not a JSON object", response.status_code)
        return body


def _raise(response: httpx.Response) -> None:
    """Raise the server's refusal: its JSON "detail" and the other keys, else the status."""
    if response.is_redirect:  # not followed: a token must not travel to another address
        where = response.headers.get("Location", "?")
        raise ClientError(f"the server redirected to {where}: {_OWN_ADDRESS}", response.status_code)
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("detail"):
        details = {k: v for k, v in body.items() if k not in ("error", "detail")}
        raise ClientError(str(body["detail"]), response.status_code, details or None)
    raise ClientError(
        f"the server answered HTTP {response.status_code} {response.reason_phrase}",
        response.status_code,
    )


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


def _ref(value: str | int) -> str:
    """A test set or run named by id or name, as a path segment."""
    from urllib.parse import quote

    return quote(str(value), safe="")


def _params(options: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}


def _want_frame(as_frame: bool | None) -> bool:
    """True when a DataFrame is asked for, or (None) when pandas is installed."""
    if as_frame is False:
        return False
    try:
        import pandas  # noqa: F401
    except ImportError:
        if as_frame:
            raise ClientError("as_frame=True needs pandas (pip install pandas)") from None
        return False
    return True


def _run_file(run: Any, name: str | None) -> tuple[str, BinaryIO]:
    """The run as (file name, binary stream): a path as it is; a dict or a DataFrame as TREC."""
    if isinstance(run, str | os.PathLike):
        return os.path.basename(os.fspath(run)), open(run, "rb")
    if isinstance(run, Mapping):
        rows = ((q, d, s) for q, docs in run.items() for d, s in docs.items())
    elif all(hasattr(run, attr) for attr in ("columns", "itertuples")):
        missing = {"qid", "docid", "score"} - {str(c) for c in run.columns}
        if missing:
            raise ClientError(f"the DataFrame lacks the column(s) {', '.join(sorted(missing))}")
        rows = run[["qid", "docid", "score"]].itertuples(index=False, name=None)
    else:
        raise ClientError("a run is a file path, a dict {qid: {docid: score}} or a DataFrame")
    text = io.StringIO()
    ranks: dict[str, int] = {}
    tag = "_".join((name or "").split()) or "client"
    for qid, docid, score in rows:
        qid, docid, value = _trec_row(str(qid), str(docid), score)
        # The server ranks by score like trec_eval; the rank column is only the file's order.
        ranks[qid] = rank = ranks.get(qid, 0) + 1
        text.write(f"{qid} Q0 {docid} {rank} {value!r} {tag}\n")
    if not ranks:
        raise ClientError("the run has no (qid, docid, score) entry to upload")
    return f"{name or 'run'}.trec", io.BytesIO(text.getvalue().encode())


_TREC_BLANKS = frozenset(" \t\n\v\f\r")  # what the server splits a TREC line on


def _trec_row(qid: str, docid: str, score: Any) -> tuple[str, str, float]:
    """The row as a TREC line holds it, or ClientError: a blank in a qid or docid would shift
    the columns (a docid 'doc 7' read as 'doc' scored 7) and silently upload another run."""
    for what, value in (("qid", qid), ("docid", docid)):
        where = f"{what} {value!r}" + (f" of query {qid!r}" if what == "docid" else "")
        if not value:
            raise ClientError(f"{where} is empty")
        if not _TREC_BLANKS.isdisjoint(value):
            raise ClientError(f"{where} contains whitespace, which a run file cannot carry")
    try:
        number = float(score)
    except (TypeError, ValueError):
        number = None
    if number is None or not math.isfinite(number):
        kind = "a number" if number is None else "a finite number"
        raise ClientError(f"score of query {qid!r}, docid {docid!r} is {score!r}, not {kind}")
    return qid, docid, number
