"""Blind judging (several judgments per pair): what an annotator could read others' grades
off is kept from those who are only annotators there, and each page says why.

build_runs: one query, d1 graded 0 by alice and 2 by bob, d2 graded 1 by both; runs A (d1, d2)
and B (d2, d1); two judgments per pair, so the set is blind. Under max, d1 counts 2: alice,
who gave 0, could tell from the runs' means that bob gave 2. Under min it counts 0, and so on.
"""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from tests.factory import AuthActions, build_runs, make_user, without_tokens

SHARED = re.compile(r"\d+ shared pairs?")  # "on 2 shared pairs" under the agreement


@pytest.fixture
def runs_set(app: Flask) -> int:
    make_user(app, "boss", "admin")
    return build_runs(app).id


def _page(client: FlaskClient, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return without_tokens(response.get_data(as_text=True))


def test_policies_page_keeps_the_means_from_a_blind_annotator(
    app: Flask, client: FlaskClient, auth: AuthActions, runs_set: int
) -> None:
    url = f"/test-sets/{runs_set}/policies"
    auth.login("alice")
    page = _page(client, url)
    assert 'class="policies"' not in page and "Verdict" not in page
    assert 'id="policies-withheld"' in page and "judged blind" in page
    auth.logout()
    auth.login("boss")
    page = _page(client, url)
    assert 'class="policies"' in page and 'id="policies-withheld"' not in page
    auth.logout()
    # One judgment per pair: not blind, the annotator sees the table.
    with app.app_context():
        db.session.execute(
            sa.update(TestSet).where(TestSet.id == runs_set).values(judgments_per_pair=1)
        )
        db.session.commit()
    auth.login("alice")
    assert 'class="policies"' in _page(client, url)


def test_dashboard_policy_switch_is_kept_from_a_blind_annotator(
    client: FlaskClient, auth: AuthActions, runs_set: int
) -> None:
    base = f"/test-sets/{runs_set}/dashboard/"
    auth.login("alice")
    page = _page(client, base)
    assert 'name="aggregation"' not in page
    assert 'id="policy-withheld"' in page and "median" in page
    for policy in ("max", "min", "mean", "majority"):
        refused = client.get(f"{base}?aggregation={policy}")
        assert refused.status_code == 403, policy
        assert "judged blind" in refused.get_data(as_text=True)
        # The downloads of the overview take the same options.
        download = f"{base}export/overview.csv?aggregation={policy}"
        assert client.get(download).status_code == 403, download
    # The test set's own policy, named, is what the page shows anyway.
    assert client.get(f"{base}?aggregation=median").status_code == 200
    assert client.get(f"{base}export/overview.csv").status_code == 200
    auth.logout()
    auth.login("boss")
    page = _page(client, base)
    assert 'name="aggregation"' in page and 'id="policy-withheld"' not in page
    assert client.get(f"{base}?aggregation=max").status_code == 200


def test_people_page_keeps_the_shared_pairs_from_a_blind_annotator(
    client: FlaskClient, auth: AuthActions, runs_set: int
) -> None:
    base = f"/test-sets/{runs_set}/people"
    auth.login("alice")
    page = _page(client, base)
    assert not SHARED.search(page)
    assert "how many of your pairs the others graded" in page
    (row,) = client.get(base + ".json").get_json()["people"]
    assert row["annotator"] == "alice" and row["shared_pairs"] is None
    header, line = client.get(base + ".csv").get_data(as_text=True).splitlines()
    cells = dict(zip(header.split(","), line.split(","), strict=True))
    assert cells["shared_pairs"] == ""
    auth.logout()
    auth.login("boss")
    assert "on 2 shared pairs" in _page(client, base)
    rows = {r["annotator"]: r for r in client.get(base + ".json").get_json()["people"]}
    assert rows["alice"]["shared_pairs"] == 2
