"""A comparison with no compared query (every grade 0: NDCG@k undefined everywhere) keeps its
keys but claims no robustness, and says that nothing could be compared: the CLI (JSON and
table), the API, the compare page and its JSON export alike."""

from __future__ import annotations

import io
import json

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.accounts import create_token
from tests.factory import build_test_set

RUNS = {"A": "q1 Q0 a 1 2.0 s\nq1 Q0 b 2 1.0 s\n", "B": "q1 Q0 b 1 2.0 s\nq1 Q0 u 2 1.0 s\n"}
NOTHING = "Nothing could be compared"


@pytest.fixture
def zeros(app: Flask) -> dict[str, int]:
    """The test set "zeros": q1's judged chunks both graded 0, runs A and B (ids by name)."""
    with app.app_context():
        test_set = build_test_set(
            "zeros", {"q1": "parental leave"}, [("q1", "a", 0), ("q1", "b", 0)]
        )
        ids = {
            name: run_service.upload_run(
                test_set, io.BytesIO(text.encode()), f"{name}.trec", name, None
            ).id
            for name, text in RUNS.items()
        }
        ids["set"] = test_set.id
        db.session.remove()
    return ids


def _honest(data: dict) -> None:
    assert data["compared"] == 0
    assert data["robust"] is False
    # The keys other tools read stay, with their values where nothing was compared.
    assert (data["winner"], data["flips_if_unjudged_top"], data["unjudged_pairs"]) == (
        "tie",
        False,
        0,
    )


def test_the_cli_claims_no_robustness_when_nothing_was_compared(
    runner: FlaskCliRunner, zeros: dict[str, int]
) -> None:
    out = runner.invoke(args=["run", "compare", "zeros", "A", "B", "--json"])
    assert out.exit_code == 0, out.output
    _honest(json.loads(out.output))
    table = runner.invoke(args=["run", "compare", "zeros", "A", "B"])
    assert table.exit_code == 0, table.output
    assert NOTHING in table.output and "robust:" not in table.output


def test_a_compared_query_gives_its_count(runner: FlaskCliRunner, app: Flask) -> None:
    with app.app_context():
        test_set = build_test_set(
            "one", {"q1": "x", "q2": "y"}, [("q1", "a", 2), ("q1", "b", 1), ("q2", "a", 0)]
        )
        for name, text in {"A": "q1 Q0 a 1 2 s\nq1 Q0 b 2 1 s\n", "B": "q1 Q0 b 1 2 s\n"}.items():
            run_service.upload_run(test_set, io.BytesIO(text.encode()), "r.trec", name, None)
        db.session.remove()
    data = json.loads(runner.invoke(args=["run", "compare", "one", "A", "B", "--json"]).output)
    # q2 is graded 0 only (NDCG undefined): q1 alone is compared. A holds the ideal order, B
    # misses a; nothing is unjudged in either top 10, so the top-grade world is today's.
    assert (data["compared"], data["robust"], data["winner"]) == (1, True, "A")


def test_the_api_page_and_export_say_so_too(
    app: Flask, client: FlaskClient, as_admin: FlaskClient, admin_id: int, zeros: dict[str, int]
) -> None:
    with app.app_context():
        token = create_token(db.session.get_one(User, admin_id))
        db.session.remove()
    api = client.get(
        "/api/testsets/zeros/compare?a=A&b=B", headers={"Authorization": f"Bearer {token}"}
    )
    assert api.status_code == 200
    _honest(api.get_json())
    runs = f"run={zeros['A']}&run={zeros['B']}"
    base = f"/test-sets/{zeros['set']}/dashboard"
    export = as_admin.get(f"{base}/export/compare.json?{runs}")
    assert export.status_code == 200
    _honest(export.get_json())
    page = as_admin.get(f"{base}/compare/?{runs}").get_data(as_text=True)
    robustness = page.split('id="robustness"', 1)[1].split("</section>", 1)[0]
    assert NOTHING in robustness
    assert "<strong>Robust:</strong>" not in robustness and 'data-robust="true"' not in robustness
