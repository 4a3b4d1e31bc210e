"""Defining a test set's retriever endpoints (with presets for common engines)."""

from __future__ import annotations

import json
import re
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.formats import HitsError, Mapping, check_mapping, preset
from ndcg_labeler.models import RetrieverEndpoint, TestSet, User
from ndcg_labeler.services import ServiceError, audit, outbound, url_name
from ndcg_labeler.services.endpoints.limits import (
    DEFAULT_CONCURRENCY,
    DEFAULT_RPM,
    DEFAULT_TIMEOUT,
    read_limits,
)

METHODS = ("GET", "POST")
# The name column's length (RetrieverEndpoint.name).
MAX_NAME = 100
_HEADER = re.compile(r"^\s*([A-Za-z0-9-]+)\s*:\s*(.*)$")


def parse_header(text: str) -> tuple[str, str]:
    """'Name: value' (the value may hold ${ENV_VAR}, if NDCG_SECRET_ENV allows) -> (name, value)."""
    found = _HEADER.match(text or "")
    if found is None:
        raise ServiceError(f"a header must read 'Name: value', not '{text}'")
    outbound.check_secret_references(found.group(2))
    return found.group(1), found.group(2).strip()


def mapping_of(endpoint: RetrieverEndpoint) -> Mapping:
    """The endpoint's response mapping."""
    return Mapping(endpoint.hits_expr, endpoint.id_expr, endpoint.score_expr, endpoint.text_expr)


def list_endpoints(test_set: TestSet) -> list[RetrieverEndpoint]:
    """The test set's endpoints, by name."""
    stmt = (
        sa.select(RetrieverEndpoint)
        .where(RetrieverEndpoint.test_set_id == test_set.id)
        .order_by(RetrieverEndpoint.name)
    )
    return list(db.session.scalars(stmt))


def require_endpoint(test_set: TestSet, name: str, *, lock: bool = False) -> RetrieverEndpoint:
    """The endpoint of the test set with this name, or a ServiceError naming it. `lock`: hold
    its row until the transaction ends (PostgreSQL), so that a rename or delete, which takes
    the same lock before it looks for jobs asking the endpoint, waits for a job being queued."""
    stmt = sa.select(RetrieverEndpoint).where(
        RetrieverEndpoint.test_set_id == test_set.id, RetrieverEndpoint.name == name
    )
    if lock:
        stmt = stmt.with_for_update().execution_options(populate_existing=True)
    found = db.session.scalar(stmt)
    if found is None:
        raise ServiceError(f"test set '{test_set.name}' has no endpoint named '{name}'")
    return found


def add_endpoint(
    test_set: TestSet,
    name: str,
    url: str,
    *,
    method: str = "GET",
    body: str = "",
    headers: list[str] | None = None,
    hits: str = "",
    id_expr: str = "",
    score: str = "",
    text: str = "",
    preset_name: str = "",
    text_field: str = "",
    concurrency: int | str = DEFAULT_CONCURRENCY,
    requests_per_minute: int | str = DEFAULT_RPM,
    timeout: float | str = DEFAULT_TIMEOUT,
    actor: User | None = None,
) -> RetrieverEndpoint:
    """Create an endpoint after checking the URL, body template, headers and mapping; the
    audit trail records who added it (header names only: their values may be secret)."""
    columns = checked_columns(
        test_set,
        None,
        name=name,
        url=url,
        method=method,
        body=body,
        headers=headers,
        hits=hits,
        id_expr=id_expr,
        score=score,
        text=text,
        preset_name=preset_name,
        text_field=text_field,
        concurrency=concurrency,
        requests_per_minute=requests_per_minute,
        timeout=timeout,
    )
    endpoint = RetrieverEndpoint(test_set_id=test_set.id, **columns)
    db.session.add(endpoint)
    db.session.flush()
    audit.record(
        actor,
        "endpoint.add",
        "endpoint",
        endpoint.id,
        test_set_id=test_set.id,
        name=endpoint.name,
        url=endpoint.url,
        headers=sorted(columns["headers"]),
    )
    db.session.commit()
    return endpoint


def checked_columns(
    test_set: TestSet,
    own: RetrieverEndpoint | None,
    *,
    name: str,
    url: str,
    method: str,
    body: str,
    headers: list[str] | None,
    hits: str,
    id_expr: str,
    score: str,
    text: str,
    preset_name: str,
    text_field: str,
    concurrency: int | str,
    requests_per_minute: int | str,
    timeout: float | str,
) -> dict[str, Any]:
    """An endpoint's column values once every setting is checked (add's and edit's one check),
    or a ServiceError; `own`: the endpoint being edited, whose name is not taken by itself.
    The limits may be text as typed (the form's, the CLI's): read_limits reads them."""
    name = url_name("an endpoint", name, MAX_NAME)
    _fits("the URL", url, "url")
    method = _check_request(url, method, body)
    mapping = _mapping(preset_name, text_field, hits, id_expr, score, text)
    for what, value, column in (
        ("the hits expression", mapping.hits, "hits_expr"),
        ("the id expression", mapping.id, "id_expr"),
        ("the score expression", mapping.score, "score_expr"),
        ("the text expression", mapping.text, "text_expr"),
    ):
        _fits(what, value, column)
    parsed: dict[str, Any] = dict(parse_header(h) for h in headers or [])
    limits, wrong = read_limits(concurrency, requests_per_minute, timeout)
    if wrong:
        raise ServiceError("; ".join(wrong.values()))
    stmt = sa.select(RetrieverEndpoint.id).where(
        RetrieverEndpoint.test_set_id == test_set.id, RetrieverEndpoint.name == name
    )
    if own is not None:
        stmt = stmt.where(RetrieverEndpoint.id != own.id)
    if db.session.scalar(stmt) is not None:
        raise ServiceError(f"test set '{test_set.name}' already has an endpoint named '{name}'")
    return {
        "name": name,
        "url": url,
        "method": method,
        "body_template": body,
        "headers": parsed,
        "hits_expr": mapping.hits,
        "id_expr": mapping.id,
        "score_expr": mapping.score,
        "text_expr": mapping.text,
        "concurrency": int(limits["concurrency"]),
        "requests_per_minute": int(limits["requests_per_minute"]),
        "timeout": float(limits["timeout"]),
    }


def _fits(what: str, value: str, column: str) -> None:
    """Refuse a value longer than its column holds (PostgreSQL would refuse it at the commit;
    SQLite would keep it whole)."""
    limit = RetrieverEndpoint.__table__.c[column].type.length
    if len(value or "") > limit:
        raise ServiceError(f"{what} must be at most {limit} characters, not {len(value)}")


def _check_request(url: str, method: str, body: str) -> str:
    """The request's method, upper-cased, once the URL and body template make a request."""
    if not re.match(r"^https?://", url or ""):
        raise ServiceError("the URL must start with http:// or https://")
    method = (method or "GET").upper()
    if method not in METHODS:
        raise ServiceError("the method must be GET or POST")
    if method == "POST":
        if not body:
            raise ServiceError("a POST endpoint needs a JSON body template")
        try:
            json.loads(body.replace("{query}", "q").replace("{qid}", "q").replace("{k}", "1"))
        except ValueError as exc:
            raise ServiceError(f"the body template is not JSON once filled in: {exc}") from None
    elif "{query}" not in url:
        raise ServiceError("a GET endpoint's URL needs the {query} placeholder")
    return method


def _mapping(
    preset_name: str, text_field: str, hits: str, id_expr: str, score: str, text: str
) -> Mapping:
    """The response mapping: the preset's, else the JMESPath expressions given; checked."""
    try:
        mapping = (
            preset(preset_name, text_field) if preset_name else Mapping(hits, id_expr, score, text)
        )
        check_mapping(mapping)
    except HitsError as exc:
        raise ServiceError(str(exc)) from None
    return mapping


def snapshot(endpoint: RetrieverEndpoint) -> dict[str, Any]:
    """The configuration a fetched run keeps (header names only: their values may be secret)."""
    return {
        "endpoint": endpoint.name,
        "url": endpoint.url,
        "method": endpoint.method,
        "body_template": endpoint.body_template,
        "header_names": sorted(endpoint.headers or {}),
        "hits": endpoint.hits_expr,
        "id": endpoint.id_expr,
        "score": endpoint.score_expr,
        "text": endpoint.text_expr,
    }
