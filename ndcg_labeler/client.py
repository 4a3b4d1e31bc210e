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
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO

import httpx

__all__ = ["Client", "ClientError"]

# The measures the scores endpoint computes per query: NDCG at a cutoff k, in trec_eval's and
# ir_measures' spellings.
_NDCG = re.compile(r"^(?:ndcg_cut_(\d+)|nDCG@(\d+))$")


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
        token = token or os.environ.get("NDCG_TOKEN")
        if not token:
            raise ClientError("give a personal API token (the Account page), or set NDCG_TOKEN")
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
        """Per-query values of `measures` (NDCG at a cutoff: `nDCG@10` or `ndcg_cut_10`) under
        `labels` (human, machine:JUDGE, fill:JUDGE, ppi:JUDGE).

        Returns {qid: {measure: value}}, or a DataFrame indexed by qid with one column per
        measure when pandas is installed and `as_frame` is not False. `options` are the scores
        endpoint's other parameters (gain, ideal, judged_only, aggregation).
        """
        values: dict[str, dict[str, float | None]] = {}
        for measure in measures:
            k = _ndcg_cutoff(measure)
            answer = self._get(
                f"testsets/{_ref(test_set)}/runs/{_ref(run)}/scores",
                params={"k": k, "labels": labels, **_params(options)},
            )
            for row in answer["queries"]:
                values.setdefault(str(row["qid"]), {})[measure] = row.get("ndcg")
        if not _want_frame(as_frame):
            return values
        import pandas as pd

        frame = pd.DataFrame.from_dict(values, orient="index", columns=list(measures))
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
    ) -> dict[str, Any]:
        """Upload a run (admins): a file path (any format the server reads), a dict
        {qid: {docid: score}} (ranx/pytrec_eval), or a pandas DataFrame with columns qid, docid,
        score. Returns the stored run with its validation report."""
        filename, stream = _run_file(run, name)
        data = {"name": name or "", "notes": notes}
        if depth is not None:
            data["depth"] = str(depth)
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

    def _send(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ClientError(f"could not reach the server: {exc}") from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_error:
            if isinstance(body, dict) and body.get("detail"):
                details = {k: v for k, v in body.items() if k not in ("error", "detail")}
                raise ClientError(str(body["detail"]), response.status_code, details or None)
            raise ClientError(
                f"the server answered HTTP {response.status_code} {response.reason_phrase}",
                response.status_code,
            )
        if not isinstance(body, dict):
            raise ClientError("the server's answer is not a JSON object", response.status_code)
        return body


def _ref(value: str | int) -> str:
    """A test set or run named by id or name, as a path segment."""
    from urllib.parse import quote

    return quote(str(value), safe="")


def _params(options: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}


def _ndcg_cutoff(measure: str) -> int:
    found = _NDCG.match(measure)
    if found is None:
        raise ClientError(
            f"measure {measure!r}: the scores endpoint gives NDCG at a cutoff, "
            f"as 'nDCG@10' or 'ndcg_cut_10'"
        )
    return int(found.group(1) or found.group(2))


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
    for qid, docid, score in rows:
        # The server ranks by score like trec_eval; the rank column is only the file's order.
        ranks[str(qid)] = rank = ranks.get(str(qid), 0) + 1
        text.write(f"{qid} Q0 {docid} {rank} {float(score)!r} {name or 'client'}\n")
    return f"{name or 'run'}.trec", io.BytesIO(text.getvalue().encode())
