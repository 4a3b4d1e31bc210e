"""Fixtures for the dashboard tests (the scenario itself: tests/factory.py, `build_dashboard`)."""

from __future__ import annotations

import pytest
from flask import Flask

from tests.factory import Demo, build_dashboard


@pytest.fixture
def dash(app: Flask) -> Demo:
    """The dashboard test set with runs A and B."""
    return build_dashboard(app)
