"""Blind sets: a run's own page keeps its per-query table (NDCG, DCG, IDCG, relevant counts)
from annotators, as the dashboard's run table does, while its mean stays visible."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from tests.factory import A3, AuthActions, Demo, grant


def _blind(app: Flask, dash: Demo) -> None:
    with app.app_context():
        db.session.get_one(TestSet, dash.test_set_id).judgments_per_pair = 2  # blind judging
        db.session.commit()


def _run_page(client: FlaskClient, dash: Demo) -> str:
    response = client.get(f"/test-sets/{dash.test_set_id}/runs/{dash.run_a}?k=3")
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_a_blind_annotator_sees_the_runs_mean_but_no_query_by_query_figures(
    app: Flask, client: FlaskClient, auth: AuthActions, annotator_id: int, dash: Demo
) -> None:
    grant(app, dash.test_set_id, annotator_id)
    _blind(app, dash)
    auth.login("ann")
    page = _run_page(client, dash)
    # q1's NDCG@3 in run A, by hand: (1 + 3/2) / (3 + 3/log2 3 + 1).
    assert f"{A3['q1']:.4f}" not in page
    assert 'id="gap-heading"' not in page
    assert "per-query figures are for admins" in page
    assert "Mean NDCG@3" in page  # the run's mean: still shown


def test_an_admin_and_a_non_blind_annotator_still_see_them(
    app: Flask, client: FlaskClient, auth: AuthActions, annotator_id: int, admin_id: int, dash: Demo
) -> None:
    grant(app, dash.test_set_id, annotator_id)
    auth.login("ann")  # one judgment per pair: not blind
    assert f"{A3['q1']:.4f}" in _run_page(client, dash)
    _blind(app, dash)
    auth.logout()
    auth.login("admin")
    page = _run_page(client, dash)
    assert f"{A3['q1']:.4f}" in page and 'id="gap-heading"' in page
