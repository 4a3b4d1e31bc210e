"""A score view asked for an unknown judge's labels answers 400 with the reason, never a 500."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from tests.factory import Demo

PAGES = (
    "/",
    "/_overview",
    "/runs/{a}",
    "/runs/{a}/_table",
    "/export/overview.json",
    "/export/overview.csv",
    "/export/runs/{a}/queries.json",
    "/export/runs/{a}/queries.csv",
    "/export/runs/{a}/trec_eval.txt",
    "/compare/?stats=1",
    "/export/compare.json",
)


@pytest.mark.parametrize("labels", ["machine:nobody", "fill:nobody", "ppi:nobody"])
@pytest.mark.parametrize("page", PAGES)
def test_an_unknown_judge_is_a_400_that_names_it(
    as_admin: FlaskClient, dash: Demo, page: str, labels: str
) -> None:
    url = dash.url(page.format(a=dash.run_a))
    response = as_admin.get(f"{url}{'&' if '?' in url else '?'}labels={labels}")
    assert response.status_code == 400
    assert "unknown judge" in response.get_data(as_text=True)
