"""The runs page's optional columns: any measure name, its mean per run; a bad name says why."""

from __future__ import annotations

import io
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import TestSet
from ndcg_labeler.services import runs as run_service

SET_NAME = "web"  # the `test_set_id` fixture (tests/runs/conftest.py) builds it
QUERIES = {"q1": "leave", "q2": "expenses"}
QRELS = [("q1", "a", 3), ("q1", "b", 1), ("q2", "x", 2)]
RUN = b"q1 Q0 b 1 2.0 s\nq1 Q0 a 2 1.0 s\nq2 Q0 x 1 1.0 s\n"


@pytest.fixture
def run_id(app: Flask, test_set_id: int) -> int:
    with app.app_context():
        test_set = db.session.get_one(TestSet, test_set_id)
        found = run_service.upload_run(test_set, io.BytesIO(RUN), "r.trec", "bm25", None).id
        db.session.remove()
        return found


def test_picked_measures_become_columns(as_admin: FlaskClient, test_set_id: int, run_id: int):
    page = as_admin.get(f"/test-sets/{test_set_id}/runs/?measure=RR,P(rel=3)@1&measure=nDCG@1")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    for name in ("RR", "P(rel=3)@1", "nDCG@1"):
        assert f"Mean {name}</th>" in html
    # By hand: q1 ranks b (1) then a (3), q2 ranks x (2) first. RR: 1, 1. P(rel=3)@1: 0, 0.
    # nDCG@1: q1 1/3, q2 1; mean 2/3.
    assert ">1.0000</td>" in html and ">0.0000</td>" in html
    assert f">{(1 / 3 + 1) / 2:.4f}</td>" in html
    plain = as_admin.get(f"/test-sets/{test_set_id}/runs/").get_data(as_text=True)
    assert "Mean RR" not in plain


def test_a_bad_name_is_shown_escaped_with_what_is_accepted(
    as_admin: FlaskClient, test_set_id: int, run_id: int
) -> None:
    page = as_admin.get(f"/test-sets/{test_set_id}/runs/?measure=<b>x</b>")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "unknown measure &#39;&lt;b&gt;x&lt;/b&gt;&#39;" in html and "bpref" in html
    assert "<b>x</b>" not in html.replace('value="&lt;b&gt;x&lt;/b&gt;"', "")


def test_the_query_table_shows_picked_measures_per_query(
    as_admin: FlaskClient, test_set_id: int, run_id: int
) -> None:
    url = f"/test-sets/{test_set_id}/dashboard/runs/{run_id}"
    html = as_admin.get(url + "?k=1&measure=RR@1,P(rel=3)@2").get_data(as_text=True)
    assert '<th scope="col" class="num">RR@1</th>' in html
    assert '<th scope="col" class="num">P(rel=3)@2</th>' in html
    # q1 ranks b (grade 1, relevant from 1) then a (3): RR@1 1, P(rel=3)@2 1/2.
    q1 = html[html.index('data-qid="q1"') : html.index("</tr>", html.index('data-qid="q1"'))]
    assert q1.rstrip().endswith('<td class="num">1.0000</td><td class="num">0.5000</td>')
    # Sorting and paging links keep the picked columns.
    links = re.findall(r'href="([^"]*sort=[^"]*)"', html)
    assert links and all("measure=RR@1,+P(rel%3D3)@2" in link for link in links)
    bad = as_admin.get(url + "?measure=Q@1").get_data(as_text=True)
    assert "unknown measure &#39;Q@1&#39;" in bad
