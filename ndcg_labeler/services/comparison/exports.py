"""The comparison's exports: per-query deltas as CSV (the dashboard's CSV rules), and JSON."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ndcg_labeler.services.comparison.compare import Comparison, robustness_json
from ndcg_labeler.services.dashboard import to_csv
from ndcg_labeler.services.live import ScoreOptions, named_measures


def compare_header(result: Comparison) -> list[str]:
    """The CSV's columns, naming the measure and the runs: qid, query,
    ndcg_cut_K:<run A>, ndcg_cut_K:<run B>, delta_b_minus_a, then each run's sensitivity to
    unjudged chunks (a_if_unjudged_top, b_if_unjudged_top, a_condensed, b_condensed)."""
    measure = f"ndcg_cut_{result.options.k}"
    pair = result.first_pair
    return [
        "qid",
        "query",
        f"{measure}:{pair.a.name}",
        f"{measure}:{pair.b.name}",
        "delta_b_minus_a",
        "a_if_unjudged_top",
        "b_if_unjudged_top",
        "a_condensed",
        "b_condensed",
    ]


def compare_csv(
    result: Comparison, names: Iterable[str] = (), options: ScoreOptions | None = None
) -> str:
    """Per-query NDCG@k of A and B and the difference, largest |B − A| first, with each run's
    values if its unjudged top k had the top grade and on condensed lists; then, for each
    measure named (?measure=, under `options`), its value in A and in B as two more columns
    `<name as asked>:<run A>`, `<name as asked>:<run B>` (empty where undefined)."""
    names = list(names)
    pair = result.first_pair
    chosen = options or ScoreOptions()
    per_run = [named_measures(run, names, chosen) for run in (pair.a, pair.b)] if names else []
    header = compare_header(result)
    values: list[dict[str, float | None]] = []
    for a_values, b_values in zip(*per_run, strict=True) if per_run else ():
        header += [
            f"{a_values.measure.shown}:{pair.a.name}",
            f"{b_values.measure.shown}:{pair.b.name}",
        ]
        values += [a_values.by_qid(), b_values.by_qid()]
    return to_csv(
        header,
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
                *(found.get(d.qid) for found in values),
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
                **robustness_json(p.robustness, result.compared),
            }
            for p in result.pairs
        ]
    return out
