"""Blind sets: the compare page keeps each run's per-query NDCG from annotators, as the run table
does, while its means stay visible."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from tests.factory import A3, AuthActions, Demo, grant


def _blind(app: Flask, dash: Demo, annotator_id: int) -> None:
    grant(app, dash.test_set_id, annotator_id)
    with app.app_context():
        db.session.get_one(TestSet, dash.test_set_id).judgments_per_pair = 2  # blind judging
        db.session.commit()


def test_the_page_shows_a_blind_annotator_means_but_no_query_by_query_figures(
    app: Flask, client: FlaskClient, auth: AuthActions, annotator_id: int, dash: Demo
) -> None:
    _blind(app, dash, annotator_id)
    auth.login("ann")
    both = f"run={dash.run_a}&run={dash.run_b}"
    page = client.get(dash.url(f"/compare/?k=3&stats=1&{both}")).get_data(as_text=True)
    # q1's NDCG@3 in run A, by hand: (1 + 3/2) / (3 + 3/log2 3 + 1), the run table's figure.
    assert f"{A3['q1']:.4f}" not in page
    assert 'id="deltas-table"' not in page and 'id="scatter-heading"' not in page
    assert "per-query figures are for admins" in page
    assert 'id="robust-heading"' in page  # a verdict about the means: still shown
    assert "/export/compare." not in page  # no link to the exports refused below
    for export in ("compare.csv", "compare.json"):
        assert client.get(dash.url(f"/export/{export}?k=3&{both}")).status_code == 403


def test_an_admin_still_sees_them_on_a_blind_set(
    app: Flask, as_admin: FlaskClient, annotator_id: int, dash: Demo
) -> None:
    _blind(app, dash, annotator_id)
    client = as_admin
    both = f"run={dash.run_a}&run={dash.run_b}"
    page = client.get(dash.url(f"/compare/?k=3&stats=1&{both}")).get_data(as_text=True)
    assert f"{A3['q1']:.4f}" in page and 'id="deltas-table"' in page
    assert client.get(dash.url(f"/export/compare.csv?k=3&{both}")).status_code == 200
