"""The labeling policy "judgments per pair" says what it does to who sees grades."""

from __future__ import annotations

import re

from flask import Flask
from flask.testing import FlaskClient

from tests.factory import make_test_set


def test_the_settings_say_several_judgments_per_pair_make_judging_blind(
    app: Flask, as_admin: FlaskClient
) -> None:
    # judgments_per_pair > 1 hides per-pair grades from annotators (accounts.grades_visible);
    # the setting's hint must say so, and that going back to 1 shows them every grade.
    test_set_id = make_test_set(app)
    page = as_admin.get(f"/test-sets/{test_set_id}/settings").get_data(as_text=True)
    hint = re.search(r'id="judgments_per_pair-hint"[^>]*>(.*?)</', page, re.S)
    assert hint is not None, page
    text = " ".join(hint.group(1).split())
    assert "2 or more make judging blind" in text
    assert "back to 1" in text
