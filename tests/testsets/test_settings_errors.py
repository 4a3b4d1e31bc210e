"""The Settings page puts each refusal under the field it is about, and states the ranges of
the test set's own scale (0–3 or 0–4), never the largest scale's."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import ServiceError, testsets
from tests.factory import make_test_set


def _form(scale: int, **change: str) -> dict[str, str]:
    data = {
        "name": "Set",
        "guidelines": "",
        "aggregation": "mean",
        "relevance_threshold": "1",
        "judgments_per_pair": "1",
        "disagreement_threshold": "2",
        "series_separator": "",
    }
    for grade in range(scale + 1):
        data[f"grades-{grade}-name"] = f"Grade {grade}"
        data[f"grades-{grade}-definition"] = ""
    data.update(change)
    return data


def _errors(page: str) -> dict[str, list[str]]:
    """{field id: its error messages} as shown under the fields."""
    found: dict[str, list[str]] = {}
    for field_id, text in re.findall(r'<p class="error" id="([\w-]+)-error">([^<]*)</p>', page):
        found.setdefault(field_id, []).append(text)
    return found


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        # Within the largest scale's 1–4 but past this 0–3 set's 3.
        ({"disagreement_threshold": "4"}, "disagreement_threshold", "1 and 3"),
        ({"disagreement_threshold": "5"}, "disagreement_threshold", "1 and 3"),
        ({"series_separator": "a b"}, "series_separator", "series separator"),
        ({"name": "Other"}, "name", "already exists"),
    ],
)
def test_each_refusal_is_shown_under_its_own_field(
    app: Flask, as_admin: FlaskClient, change: dict[str, str], field: str, message: str
) -> None:
    ts = make_test_set(app)
    make_test_set(app, "Other")
    with app.app_context():
        before = testsets.settings_of(db.session.get_one(TestSet, ts))
    response = as_admin.post(f"/test-sets/{ts}/settings", data=_form(3, **change))
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    errors = _errors(page)
    assert list(errors) == [field], errors
    assert message in errors[field][0]
    assert "1 and 4" not in page
    assert f'href="#{field}"' in page  # the summary links to the field
    with app.app_context():
        assert testsets.settings_of(db.session.get_one(TestSet, ts)) == before  # not saved


@pytest.mark.parametrize("scale", [3, 4])
def test_the_form_states_the_sets_own_range(app: Flask, as_admin: FlaskClient, scale: int) -> None:
    ts = make_test_set(app, scale=scale)
    page = as_admin.get(f"/test-sets/{ts}/settings").get_data(as_text=True)
    tag = re.search(r'<input[^>]*id="disagreement_threshold"[^>]*>', page)
    assert tag is not None and f'max="{scale}"' in tag.group(0)
    assert f"1 to {scale}" in page.split('id="disagreement_threshold-hint"', 1)[1][:200]
    # A 0–4 set takes 4.
    answer = as_admin.post(
        f"/test-sets/{ts}/settings", data=_form(scale, disagreement_threshold=str(scale))
    )
    assert answer.status_code == 302
    with app.app_context():
        assert db.session.get_one(TestSet, ts).disagreement_threshold == scale


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": "Other"}, "name"),
        ({"name": " "}, "name"),
        ({"aggregation": "vote"}, "aggregation"),
        ({"relevance_threshold": 4}, "relevance_threshold"),
        ({"judgments_per_pair": 6}, "judgments_per_pair"),
        ({"disagreement_threshold": 0}, "disagreement_threshold"),
        ({"series_separator": "a b"}, "series_separator"),
        ({"grade_labels": [{"name": "a", "definition": ""}] * 3}, "grade_labels"),
        (
            {
                "grade_labels": [{"name": "a", "definition": ""}, {"name": " ", "definition": ""}]
                + [{"name": "a", "definition": ""}] * 2
            },
            "grade_labels.1.name",
        ),
        (
            {"grade_labels": [{"name": "a", "definition": "x" * 1000}] * 4},
            "grade_labels.0.definition",
        ),
    ],
)
def test_the_service_says_which_setting_it_refused(app: Flask, change: dict, field: str) -> None:
    ts = make_test_set(app)
    make_test_set(app, "Other")
    with app.app_context():
        test_set = db.session.get_one(TestSet, ts)
        with pytest.raises(ServiceError) as refused:
            testsets.update_settings(test_set, replace(testsets.settings_of(test_set), **change))
    assert refused.value.field == field
