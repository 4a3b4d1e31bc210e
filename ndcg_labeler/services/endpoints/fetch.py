"""Fetching a run from a retriever endpoint: every query asked, then stored whole or not at all.

Queries are asked in parallel (the endpoint's concurrency and requests-per-minute); each one is
retried on 429, 5xx and timeouts. When some still fail, nothing is stored unless the caller
accepts a run without them (they are listed in the report and in the run's notes). Chunk texts
the endpoint returns for docids the test set lacks join the corpus, so they can be labeled.
"""

from __future__ import annotations

import contextvars
import csv
import io
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import FormatError, Hit
from ndcg_labeler.models import Chunk, Query, RetrieverEndpoint, Run, TestSet, User, utcnow
from ndcg_labeler.services import ServiceError, imports, noun, outbound, runs
from ndcg_labeler.services.endpoints.catalog import mapping_of, snapshot
from ndcg_labeler.services.endpoints.client import ask, build_request, fill_headers
from ndcg_labeler.services.judges import RateLimiter

# Results asked of an endpoint per query when a fetch does not say.
DEFAULT_K = 100


@dataclass
class FetchReport:
    """What `flask endpoints fetch --json` prints (plus the failures, by qid)."""

    run: str
    queries: int
    fetched: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    new_chunks: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The CLI's JSON object."""
        return {
            "run": self.run,
            "queries": self.queries,
            "fetched": self.fetched,
            "failed": len(self.failed),
            "new_chunks": self.new_chunks,
            "seconds": round(self.seconds, 3),
        }


class FetchFailed(ServiceError):
    """Some queries failed and a partial run was not accepted; nothing was stored."""

    def __init__(self, report: FetchReport) -> None:
        listed = "; ".join(f"{f['qid']}: {f['error']}" for f in report.failed[:5])
        more = f" (and {len(report.failed) - 5} more)" if len(report.failed) > 5 else ""
        self.what = (
            f"{len(report.failed)} of {report.queries} {noun(report.queries, 'query', 'queries')}"
            f" failed, so nothing was stored: "
            f"{listed}{more}"
        )
        """What failed, without the advice: a scheduled fetch cannot accept a partial run."""
        super().__init__(f"{self.what}. Fetch again, or accept a run without them.")
        self.report = report


def _check_k(k: int) -> None:
    if not 1 <= k <= runs.MAX_DEPTH:
        raise ServiceError(f"k must be a whole number from 1 to {runs.MAX_DEPTH}")


def _as_stored(hits: list[Hit], k: int) -> list[Hit]:
    """The hits a run keeps: a docid's first hit only (a ranked list names a chunk once), the
    top k of them."""
    seen: set[str] = set()
    return [h for h in hits if not (h.docid in seen or seen.add(h.docid))][:k]


def try_limit(endpoint: RetrieverEndpoint, web_timeout: float) -> float:
    """The timeout of a Try from a page served with this request timeout: the endpoint's, but at
    most half the web worker's, so the request (which the outbound transport ends by its
    timeout, connecting and reading included) is over well before the worker would be killed
    and the browser shows what went wrong instead of a gateway error."""
    return min(endpoint.timeout, web_timeout / 2)


def try_query(
    endpoint: RetrieverEndpoint, text: str, k: int = 10, timeout: float | None = None
) -> list[Hit]:
    """The hits for one query text as a fetch would store them (for "try one query" first);
    `timeout`: instead of the endpoint's (a page's shorter one, try_limit)."""
    _check_k(k)
    request = build_request(
        endpoint.url,
        endpoint.method,
        endpoint.body_template,
        fill_headers(endpoint.headers or {}),
        text,
        "try",
        k,
    )
    with outbound.outbound_client() as client:
        # One attempt: the page (or command) waits for it, and with a fetch's retries the
        # default 30 s timeout would hold it past a web worker's own timeout.
        hits = ask(
            client,
            request,
            endpoint.method,
            mapping_of(endpoint),
            endpoint.timeout if timeout is None else timeout,
            retries=0,
        )
    return _as_stored(hits, k)


def _ask_all(
    endpoint: RetrieverEndpoint,
    queries: list[tuple[str, str]],
    k: int,
    progress: Callable,
    own: Sequence[str],
) -> dict[str, list[Hit] | str]:
    mapping, limiter = mapping_of(endpoint), RateLimiter(endpoint.requests_per_minute)
    # Read once, here: the worker threads have no app context to read the settings from, and
    # an edit of the endpoint while the fetch runs must not change how its queries are asked.
    headers = fill_headers(endpoint.headers or {})
    url, method, body, timeout = (
        endpoint.url,
        endpoint.method,
        endpoint.body_template,
        endpoint.timeout,
    )

    def one(item: tuple[str, str]) -> list[Hit] | str:
        qid, text = item
        try:
            request = build_request(url, method, body, headers, text, qid, k)
            limiter.wait()
            return ask(client, request, method, mapping, timeout)
        except ServiceError as exc:
            return str(exc)

    out: dict[str, list[Hit] | str] = {}
    with outbound.outbound_client(own) as client:
        pool = ThreadPoolExecutor(endpoint.concurrency)
        try:
            # In copies of this context: it carries the job's stop event, which ends a wait for
            # the rate limit when the job is cancelled (_progress.pause).
            futures = [pool.submit(contextvars.copy_context().run, one, item) for item in queries]
            for n, (item, future) in enumerate(zip(queries, futures, strict=True), 1):
                out[item[0]] = future.result()
                progress("fetch", n, len(queries), n)
        finally:
            # A cancel (progress raises Cancelled) or an error: the queries not yet started are
            # dropped, not asked; those being asked are waited for before the client closes.
            pool.shutdown(wait=True, cancel_futures=True)
    return out


def _trec(answers: dict[str, list[Hit] | str], k: int) -> str:
    """A TREC run of the answers (rank order where the endpoint gave no scores)."""
    lines = []
    for qid, hits in answers.items():
        if isinstance(hits, str):
            continue
        unique = _as_stored(hits, k)
        use_rank = any(h.score is None for h in unique)
        for rank, hit in enumerate(unique, start=1):
            score = float(len(unique) - rank + 1) if use_rank else hit.score
            lines.append(f"{qid} Q0 {hit.docid} {rank} {score!r} fetched\n")
    return "".join(lines)


def _new_chunks(test_set: TestSet, answers: dict[str, list[Hit] | str]) -> dict[str, str]:
    texts = {
        hit.docid: hit.text
        for hits in answers.values()
        if not isinstance(hits, str)
        for hit in hits
        if hit.text
    }
    if not texts:
        return {}
    known = set(
        db.session.scalars(
            sa.select(Chunk.docid).where(
                Chunk.test_set_id == test_set.id, Chunk.docid.in_(sorted(texts))
            )
        )
    )
    return {docid: text for docid, text in texts.items() if docid not in known}


def _add_chunks(test_set: TestSet, texts: dict[str, str], user: User | None) -> None:
    """Import docid -> text into the test set's corpus (one transaction), audited as the
    fetch's `user`'s (None: the command line or the scheduler)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["docid", "text"])
    writer.writerows(sorted(texts.items()))
    corpus = imports.ImportFile(io.BytesIO(out.getvalue().encode()), "fetched-corpus.csv")
    imports.import_files(test_set, corpus=corpus, actor_id=user.id if user else None)


def fetch_run(
    test_set: TestSet,
    endpoint: RetrieverEndpoint,
    name: str,
    *,
    k: int = DEFAULT_K,
    accept_partial: bool = False,
    user: User | None = None,
    progress: Callable[[str, int, int, int], None] | None = None,
    own: Sequence[str] = (),
    series: str | None = None,
) -> tuple[Run | None, FetchReport]:
    """Ask the endpoint for every query and store the run (and new chunks); the report.

    `own`: the app's 'host:port' names as the request that queued a job saw them; `series`:
    the series the run joins (a scheduled evaluation's)."""
    started = time.monotonic()
    name = runs.clean_name(name)
    if runs.name_taken(test_set, name):
        raise ServiceError(f"this test set already has a run named '{name}'")
    _check_k(k)
    rows = db.session.execute(
        sa.select(Query.qid, Query.text).where(Query.test_set_id == test_set.id).order_by(Query.qid)
    ).all()
    queries = [(qid, text) for qid, text in rows]
    # Taken before asking: the run keeps the configuration it was fetched with, even if the
    # endpoint is edited while the fetch runs (storing the run commits, which reloads it).
    config, endpoint_name = snapshot(endpoint), endpoint.name
    answers = _ask_all(endpoint, queries, k, progress or (lambda *_: None), own)
    report = FetchReport(name, len(queries))
    report.failed = [{"qid": q, "error": a} for q, a in answers.items() if isinstance(a, str)]
    report.fetched = len(queries) - len(report.failed)
    if report.failed and not accept_partial:
        report.seconds = time.monotonic() - started
        raise FetchFailed(report)
    if not report.fetched:
        raise ServiceError("no query was fetched: nothing to store")
    new = _new_chunks(test_set, answers)
    text = _trec(answers, k)
    run = runs.upload_run(
        test_set, io.BytesIO(text.encode()), f"{endpoint_name}.trec", name, user, series=series
    )
    if new:
        try:
            _add_chunks(test_set, new, user)
        except (ServiceError, FormatError) as exc:
            # Two transactions (the run's, the corpus's): the first one is undone by hand, so
            # a fetch stores its run and new chunks together or not at all.
            runs.delete_run(run, user)
            raise ServiceError(
                f"the endpoint's new chunks could not join the corpus ({exc}), so nothing "
                "was stored"
            ) from None
        except BaseException:
            runs.delete_run(run, user)
            raise
    report.new_chunks = len(new)
    fetched = {**config, "k": k, "at": utcnow().isoformat()}
    fetched["left_out"] = [f["qid"] for f in report.failed]
    run.report = {**(run.report or {}), "fetched": fetched}
    db.session.commit()
    report.seconds = time.monotonic() - started
    return run, report
