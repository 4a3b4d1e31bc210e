"""The comparison's exports: per-query deltas as CSV (the dashboard's CSV rules), and JSON."""

from __future__ import annotations

from typing import Any

from ndcg_labeler.services.comparison.compare import Comparison, robustness_json
from ndcg_labeler.services.dashboard import to_csv


def compare_csv(result: Comparison) -> str:
    """Per-query NDCG@k of A and B and the difference, largest |B − A| first, with each run's
    values if its unjudged top k had the top grade and on condensed lists."""
    return to_csv(
        [
            "qid",
            "query",
            "a",
            "b",
            "delta",
            "a_if_unjudged_top",
            "b_if_unjudged_top",
            "a_condensed",
            "b_condensed",
        ],
        (
            [
                d.qid,
                d.text,
                d.a,
                d.b,
                d.delta,
                d.a_if_unjudged_top,
                d.b_if_unjudged_top,
                d.a_condensed,
                d.b_condensed,
            ]
            for d in result.deltas
        ),
    )


def compare_json(result: Comparison) -> dict[str, Any]:
    """The CLI's JSON plus, for three or more runs, every run against the first."""
    out = result.to_json()
    if len(result.pairs) > 1:
        out["pairs"] = [
            {
                "a": p.a.name,
                "b": p.b.name,
                "wins": p.wins,
                "ties": p.ties,
                "losses": p.losses,
                "t_test_p": p.t_test_p,
                "randomization_p": p.randomization_p,
                **robustness_json(p.robustness),
            }
            for p in result.pairs
        ]
    return out
