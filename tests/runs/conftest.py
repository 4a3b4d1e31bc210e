"""Fixtures for the run and scoring tests."""

from __future__ import annotations

import pytest
from flask import Flask

from ndcg_labeler.extensions import db
from tests.factory import build_test_set


@pytest.fixture
def test_set_id(request: pytest.FixtureRequest, app: Flask) -> int:
    """A test set named the module's SET_NAME holding its QUERIES and QRELS; returns its id."""
    module = request.module
    with app.app_context():
        test_set_id = build_test_set(module.SET_NAME, module.QUERIES, module.QRELS).id
        db.session.remove()
        return test_set_id
