"""The JSON API's shape of a run: its fields, the link to its scores and its mean NDCG@10
with n, the 95% t interval and the sensitivity to unjudged chunks (views/api_runs.py)."""

from __future__ import annotations

from typing import Any

from flask import url_for

from ndcg_labeler.models import Run, iso_utc
from ndcg_labeler.services import live


def run_json(run: Run, line: live.ListedScores | None = None) -> dict[str, Any]:
    """A run as the API lists it; `line`: its list line when the caller read it already."""
    return {
        "id": run.id,
        "name": run.name,
        "filename": run.filename,
        "format": run.format,
        "sha256": run.sha256,
        "depth": run.depth,
        "num_queries": run.num_queries,
        "num_entries": run.num_entries,
        "uploaded_at": iso_utc(run.uploaded_at),
        "notes": run.notes,
        "series": run.series,
        "tags": run.tag_names,
        "pinned": run.pinned,
        "archived": run.archived,
        "kept_depth": run.kept_depth,
        "scores_url": url_for(
            "api.scores", test_set=str(run.test_set_id), run=str(run.id), _external=True
        ),
        **mean_json(line or live.listed_scores([run])[run.id]),
    }


def mean_json(result: live.ListedScores) -> dict[str, Any]:
    """The run's mean NDCG@10 under the default options, with n and its 95% t interval."""
    return {
        "k": result.k,
        "mean_ndcg": result.mean_ndcg,
        **result.interval_json(),
        "mean_if_unjudged_top": result.mean_if_unjudged_top,
        "mean_condensed": result.mean_condensed,
        **result.means_json(),
    }
