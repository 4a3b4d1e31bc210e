"""The PPI estimate on the overview, a run's table and the compare page, always with the audit
status; and the audit status beside every machine mean (ppi_scenario.py's hand-worked set)."""

from __future__ import annotations

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from ndcg_labeler.extensions import db
from ndcg_labeler.models import Run, TestSet
from tests.evaluation.ppi_scenario import build_ppi_set, expected


def _ids(app: Flask) -> tuple[int, int, int]:
    with app.app_context():
        ts = db.session.scalar(sa.select(TestSet.id).where(TestSet.name == "ppi"))
        runs = dict(
            db.session.execute(sa.select(Run.name, Run.id).where(Run.test_set_id == ts)).all()
        )
        return ts, runs["A"], runs["B"]


def test_the_overview_shows_the_estimate_beside_both_means(
    app: Flask, as_admin: FlaskClient
) -> None:
    build_ppi_set(app, "ppi")
    ts, _, _ = _ids(app)
    want = expected(1)
    page = as_admin.get(f"/test-sets/{ts}/dashboard/?k=1&labels=ppi:gpt").get_data(as_text=True)
    assert 'id="ppi-table"' in page
    low, high = want["theta"] - want["half"], want["theta"] + want["half"]
    assert f"{want['theta']:.4f}" in page and f"[{low:.4f}, {high:.4f}]" in page
    assert "0.6000" in page and "0.6667" in page  # machine-only mean, human-only (audited)
    # The interval is the t interval about the set's mean (scoring.md), not a z interval.
    assert "95% t interval</th>" in page and "interval (z)" not in page
    assert "12 of 20 queries audited" in page
    # B: 1 − A per query, so its estimate is 1 − θ̂_A (same λ̂).
    assert f"{1 - want['theta']:.4f}" in page


def test_the_run_table_and_compare_page_show_the_estimate(
    app: Flask, as_admin: FlaskClient
) -> None:
    build_ppi_set(app, "ppi")
    ts, a, b = _ids(app)
    want = expected(1)
    table = as_admin.get(f"/test-sets/{ts}/dashboard/runs/{a}?k=1&labels=ppi:gpt")
    text = table.get_data(as_text=True)
    assert table.status_code == 200
    assert f"{want['theta']:.4f}" in text and "12 of 20 queries audited" in text
    compare = as_admin.get(
        f"/test-sets/{ts}/dashboard/compare/?run={a}&run={b}&k=1&labels=ppi:gpt"
    ).get_data(as_text=True)
    low = want["d_theta"] - want["d_half"]
    assert f"{want['d_theta']:.4f}" in compare and f"[{low:.4f}," in compare
    assert "Estimated human B − A" in compare and "12 of 20 queries audited" in compare


def test_machine_means_never_come_without_their_audit_status(
    app: Flask, as_admin: FlaskClient
) -> None:
    build_ppi_set(app, "ppi")
    ts, a, b = _ids(app)
    for url in (
        f"/test-sets/{ts}/dashboard/?labels=machine:gpt",
        f"/test-sets/{ts}/dashboard/runs/{a}?labels=machine:gpt",
        f"/test-sets/{ts}/dashboard/compare/?run={a}&run={b}&labels=fill:gpt",
    ):
        page = as_admin.get(url).get_data(as_text=True)
        assert "12 of 20 queries audited" in page, url
        assert 'id="ppi-table"' not in page and "Estimated human" not in page
    human = as_admin.get(f"/test-sets/{ts}/dashboard/").get_data(as_text=True)
    assert "queries audited" not in human


def test_fewer_than_ten_audited_queries_say_audit_more(app: Flask, as_admin: FlaskClient) -> None:
    build_ppi_set(app, "ppi", audited_limit=6)
    ts, _, _ = _ids(app)
    page = as_admin.get(f"/test-sets/{ts}/dashboard/?k=1&labels=ppi:gpt").get_data(as_text=True)
    assert "audit more queries: 6 of 20 queries audited" in page
