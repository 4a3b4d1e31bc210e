"""Queuing a fetch and renaming or deleting its endpoint, at the same instant (PostgreSQL):
both lock the endpoint's row first, so the change sees the job or the job sees the change."""

from __future__ import annotations

import os
import threading
import time

import pytest
import sqlalchemy as sa
from flask import Flask
from sqlalchemy.orm import Session

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Job, RetrieverEndpoint
from ndcg_labeler.services import ServiceError, endpoints, jobs, testsets
from tests.factory import build_test_set

# SQLite has no row locks (a writer holds the whole database); without TEST_DATABASE_URL there is
# no PostgreSQL to test.
pytestmark = pytest.mark.parametrize(
    "app", ["postgresql"] if os.environ.get("TEST_DATABASE_URL") else [], indirect=True
)


@pytest.fixture
def endpoint(app: Flask) -> int:
    """Test set 'locks' with endpoint 'es'; its id."""
    with app.app_context():
        test_set = build_test_set("locks", {"q1": "refund"})
        return endpoints.add_endpoint(
            test_set, "es", "http://127.0.0.1:9/?q={query}", hits="@", id_expr="id"
        ).id


def _hold_row(endpoint_id: int) -> Session:
    """Another connection, in a transaction holding the endpoint's row lock."""
    other = Session(db.engine)
    other.execute(
        sa.select(RetrieverEndpoint.id).where(RetrieverEndpoint.id == endpoint_id).with_for_update()
    )
    return other


def test_queuing_a_fetch_waits_for_a_change_of_its_endpoint(app: Flask, endpoint: int) -> None:
    with app.app_context():
        other = _hold_row(endpoint)  # an edit in progress
        try:
            db.session.execute(sa.text("SET lock_timeout = '300ms'"))
            test_set = testsets.require_by_name("locks")
            with pytest.raises(sa.exc.OperationalError, match="lock timeout"):
                jobs.enqueue_fetch(test_set, "es", "r1", 10, False, None)
        finally:
            other.rollback()
            other.close()


def test_a_rename_waits_for_a_fetch_being_queued_and_then_refuses(
    app: Flask, endpoint: int
) -> None:
    with app.app_context():
        test_set_id = testsets.require_by_name("locks").id
        other = _hold_row(endpoint)  # enqueue_fetch, between its lock and its commit
        other.add(
            Job(kind="fetch", test_set_id=test_set_id, state="queued", params={"endpoint": "es"})
        )
        other.flush()

        def commit_soon() -> None:
            time.sleep(0.5)
            other.commit()
            other.close()

        committer = threading.Thread(target=commit_soon)
        committer.start()
        try:
            test_set = testsets.require_by_name("locks")
            found = endpoints.require_endpoint(test_set, "es")
            with pytest.raises(ServiceError, match="cannot be renamed while job"):
                endpoints.edit_endpoint(test_set, found, name="es2")
        finally:
            committer.join()
        db.session.rollback()
        assert endpoints.require_endpoint(test_set, "es").name == "es"
