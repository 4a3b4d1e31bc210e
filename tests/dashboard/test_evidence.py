"""Badges on evidence: a run's mean gets a band only over enough queries with enough of the
top k judged; otherwise the page says "not enough labels" and what to label next."""

from __future__ import annotations

import io
import re

import pytest
from flask import Flask

from ndcg_labeler.services import runs as run_service
from ndcg_labeler.services.dashboard import MIN_JUDGED, MIN_QUERIES, mean_band
from tests.factory import build_test_set, trec


@pytest.mark.parametrize(
    ("mean", "queries", "judged", "expected"),
    [
        (0.95, 5, 0.5, "excellent"),  # exactly at both thresholds
        (0.95, 4, 1.0, "not enough labels"),  # one query short
        (0.95, 50, 0.49, "not enough labels"),  # half the top k unjudged
        (0.95, 50, None, "not enough labels"),
        (0.75, 10, 0.8, "good"),
        (0.55, 10, 0.8, "fair"),
        (0.2, 10, 0.8, "poor"),
        (None, 0, None, "undefined"),
        (float("nan"), 10, 1.0, "undefined"),
    ],
)
def test_mean_band(mean, queries: int, judged, expected: str) -> None:
    assert (MIN_QUERIES, MIN_JUDGED) == (5, 0.5)
    assert mean_band(mean, queries, judged) == expected


def _set(app: Flask, judged_docs: int) -> int:
    """6 queries; the run ranks `rel` first then two chunks, `judged_docs` of them graded 0."""
    qids = [f"q{i}" for i in range(1, 7)]
    qrels = [(q, "rel", 3) for q in qids]
    qrels += [(q, f"n{j}", 0) for q in qids for j in range(judged_docs)]
    with app.app_context():
        test_set = build_test_set(f"Evidence {judged_docs}", {q: q for q in qids}, qrels)
        ranking = {q: ["rel", "n0", "n1"] for q in qids}
        run_service.upload_run(test_set, io.BytesIO(trec(ranking)), "r.trec", "Solid", None)
        return test_set.id


def test_the_overview_shows_a_band_only_on_enough_evidence(app: Flask, as_admin) -> None:
    thin = as_admin.get(f"/test-sets/{_set(app, 0)}/dashboard/?k=3").get_data(as_text=True)
    # judged@3 = 1/3 (only `rel` of the top 3 is graded): NDCG 1.0 but no "excellent".
    assert "not enough labels" in thin and "excellent</span>" not in thin
    assert re.search(r'href="[^"]*sort=judged[^"]*dir=asc[^"]*">label next', thin)
    assert "at least 5 queries with a mean judged@k of at least 50%" in thin
    solid = as_admin.get(f"/test-sets/{_set(app, 1)}/dashboard/?k=3").get_data(as_text=True)
    # judged@3 = 2/3 over 6 queries: the band stands.
    assert '<span class="band-name">excellent</span>' in solid
    assert "label next" not in solid
