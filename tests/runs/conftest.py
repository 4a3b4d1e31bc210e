"""Fixtures for the run and scoring tests."""

from __future__ import annotations

import pytest
from flask import Flask

from ndcg_labeler.extensions import db


@pytest.fixture
def ctx(app: Flask):
    """An app context whose session is cleaned up afterwards."""
    with app.app_context():
        yield app
        db.session.remove()
