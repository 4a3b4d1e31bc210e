"""Changing and deleting a test set's retriever endpoints (runs fetched keep their snapshot).

Jobs find their endpoint by name when they start (a fetch, a scheduled evaluation), so an
endpoint is not renamed or deleted while one of them is queued or running; a schedule is the
endpoint's own, so it moves with a rename, and a scheduled endpoint is not deleted. Queuing such
a job and changing the endpoint both lock its row first, so neither misses the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, RetrieverEndpoint, TestSet, User
from ndcg_labeler.services import ServiceError, audit
from ndcg_labeler.services.endpoints.catalog import checked_columns

# add_endpoint's keywords, each of which an edit may change.
SETTINGS = (
    "name",
    "url",
    "method",
    "body",
    "headers",
    "hits",
    "id_expr",
    "score",
    "text",
    "preset_name",
    "text_field",
    "concurrency",
    "requests_per_minute",
    "timeout",
)
# The kinds of job that ask an endpoint, by its name (services/jobs/kinds.py: FETCH, SCHEDULED).
_ASKING_KINDS = ("fetch", "scheduled")


def settings_of(endpoint: RetrieverEndpoint) -> dict[str, Any]:
    """The endpoint's configuration in add_endpoint's keywords (headers as 'Name: value')."""
    return {
        "name": endpoint.name,
        "url": endpoint.url,
        "method": endpoint.method,
        "body": endpoint.body_template or "",
        "headers": [f"{k}: {v}" for k, v in (endpoint.headers or {}).items()],
        "hits": endpoint.hits_expr,
        "id_expr": endpoint.id_expr,
        "score": endpoint.score_expr or "",
        "text": endpoint.text_expr or "",
        "preset_name": "",
        "text_field": "",
        "concurrency": endpoint.concurrency,
        "requests_per_minute": endpoint.requests_per_minute,
        "timeout": endpoint.timeout,
    }


def busy_jobs(test_set: TestSet, endpoint: RetrieverEndpoint) -> list[Job]:
    """The queued or running jobs that will ask this endpoint (found by its name)."""
    stmt = (
        sa.select(Job)
        .where(
            Job.test_set_id == test_set.id,
            Job.kind.in_(_ASKING_KINDS),
            Job.state.in_(("queued", "running")),
        )
        .order_by(Job.id)
    )
    return [
        job
        for job in db.session.scalars(stmt)
        if (job.params or {}).get("endpoint") == endpoint.name
    ]


def _lock(test_set: TestSet, endpoint: RetrieverEndpoint) -> None:
    """Hold the endpoint's row (PostgreSQL) and read it afresh: a fetch being queued or a slot
    being claimed holds it until its job is committed, so busy_jobs then sees that job."""
    found = db.session.scalar(
        sa.select(RetrieverEndpoint)
        .where(RetrieverEndpoint.id == endpoint.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if found is None:
        raise ServiceError(f"test set '{test_set.name}' has no endpoint named '{endpoint.name}'")


def _busy_message(endpoint: RetrieverEndpoint, jobs: list[Job], doing: str) -> str:
    listed = ", ".join(f"job {job.id} ({job.kind}, {job.state})" for job in jobs)
    them = "it" if len(jobs) == 1 else "them"
    return (
        f"endpoint '{endpoint.name}' cannot be {doing} while {listed} asks it: wait for "
        f"{them} to end, or cancel {them}"
    )


def edit_endpoint(
    test_set: TestSet,
    endpoint: RetrieverEndpoint,
    actor: User | None = None,
    **changes: Any,
) -> RetrieverEndpoint:
    """Change the settings given (add_endpoint's keywords), checked as add checks them: on
    any error nothing changes. A preset replaces the four expressions, as on add."""
    unknown = sorted(set(changes) - set(SETTINGS))
    if unknown:
        raise TypeError(f"unknown endpoint settings: {', '.join(unknown)}")
    _lock(test_set, endpoint)
    columns = checked_columns(test_set, endpoint, **{**settings_of(endpoint), **changes})
    if columns["name"] != endpoint.name:
        busy = busy_jobs(test_set, endpoint)
        if busy:
            raise ServiceError(_busy_message(endpoint, busy, "renamed"))
    changed = {
        key: {"old": old, "new": new}
        for key, old, new in ((key, getattr(endpoint, key), new) for key, new in columns.items())
        if old != new
    }
    if "headers" in changed:
        # Header values may be secret: the trail keeps their names only.
        changed["headers"] = {key: sorted(value or {}) for key, value in changed["headers"].items()}
    for key, value in columns.items():
        setattr(endpoint, key, value)
    if changed:
        audit.record(
            actor,
            "endpoint.edit",
            "endpoint",
            endpoint.id,
            test_set_id=test_set.id,
            name=endpoint.name,
            changes=changed,
        )
    db.session.commit()
    return endpoint


def delete_endpoint(
    test_set: TestSet,
    endpoint: RetrieverEndpoint,
    actor: User | None = None,
    confirm: Callable[[], None] | None = None,
) -> None:
    """Delete the endpoint, unless it has a schedule or a job will ask it (a ServiceError that
    names them). Runs fetched from it stay, with their snapshot of it. `confirm` is called
    once the delete would be accepted (it raises to stop it)."""
    _lock(test_set, endpoint)
    if endpoint.schedule:
        raise ServiceError(
            f"endpoint '{endpoint.name}' runs on a schedule ({endpoint.schedule} into series "
            f"'{endpoint.schedule_series}'): remove its schedule first"
        )
    busy = busy_jobs(test_set, endpoint)
    if busy:
        raise ServiceError(_busy_message(endpoint, busy, "deleted"))
    if confirm is not None:
        confirm()
    audit.record(
        actor,
        "endpoint.delete",
        "endpoint",
        endpoint.id,
        test_set_id=test_set.id,
        name=endpoint.name,
        url=endpoint.url,
    )
    db.session.delete(endpoint)
    db.session.commit()
