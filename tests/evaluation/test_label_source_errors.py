"""A label source naming no judge is refused in the words the user typed (ppi:X stays ppi:X)
by the CLI, the web pages and the API alike."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services.accounts import create_token
from tests.evaluation.ppi_scenario import build_ppi_set
from tests.factory import build_dashboard

SOURCES = ("machine:gone", "fill:gone", "ppi:gone")


@pytest.mark.parametrize("labels", SOURCES)
@pytest.mark.parametrize("command", ["score", "compare", "gate"])
def test_the_cli_names_the_source_as_typed(
    app: Flask, runner: FlaskCliRunner, labels: str, command: str
) -> None:
    build_ppi_set(app, "ppi")
    runs = ["A"] if command == "score" else ["A", "B"]
    args = ["run", command, "ppi", *runs, "--labels", labels]
    if command == "gate":
        args = ["gate", "ppi", "--baseline", "A", "--candidate", "B", "--labels", labels]
    result = runner.invoke(args=args)
    assert result.exit_code != 0
    assert "unknown judge 'gone'" in result.output
    assert f"labels={labels}" in result.output
    assert "machine:gone" not in result.output or labels == "machine:gone"


@pytest.mark.parametrize("labels", SOURCES)
def test_the_web_and_api_name_the_source_as_typed(
    app: Flask, client: FlaskClient, as_admin: FlaskClient, admin_id: int, labels: str
) -> None:
    dash = build_dashboard(app, "ppi")
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        db.session.remove()
    headers = {"Authorization": f"Bearer {token}"}
    for url in (
        f"/api/testsets/ppi/runs/A/scores?labels={labels}",
        f"/api/testsets/ppi/compare?a=A&b=B&labels={labels}",
    ):
        answer = client.get(url, headers=headers)
        assert answer.status_code == 400, url
        detail = answer.get_json()["detail"]
        assert "unknown judge 'gone'" in detail and f"labels={labels}" in detail, detail
    gate = client.post(
        "/api/testsets/ppi/gate",
        json={"baseline": "A", "candidate": "B", "labels": labels},
        headers=headers,
    )
    assert gate.status_code == 400
    assert f"labels={labels}" in gate.get_json()["detail"], gate.get_json()
    for page in ("/", f"/runs/{dash.run_a}", "/compare/"):
        page_answer = as_admin.get(f"{dash.url(page)}?labels={labels}")
        text = page_answer.get_data(as_text=True)
        assert page_answer.status_code == 400, page
        assert f"labels={labels}" in text, page
