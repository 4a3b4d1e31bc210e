"""The dashboards' charts, built from the numbers the dashboard services computed.

Services compute; this module only decides how their numbers are drawn (views/charts.py).
"""

from __future__ import annotations

from ndcg_labeler.models import Run
from ndcg_labeler.services import comparison, dashboard, live
from ndcg_labeler.views import charts


def over_k(overview: dashboard.Overview) -> charts.Chart | None:
    """Every run's mean NDCG@k as k grows (None without runs)."""
    if not overview.means_by_k:
        return None
    # means_by_k follows overview.runs, one line per run.
    kept = [summary.run.kept_depth for summary in overview.runs]
    return charts.line_over_k(live.K_CHOICES, overview.means_by_k, kept)


def run_over_k(run: Run, options: live.ScoreOptions) -> charts.Chart:
    """One run's mean NDCG@k as k grows."""
    means = dashboard.means_over_k(run, options)
    return charts.line_over_k(live.K_CHOICES, [(run.name, means)], [run.kept_depth])


def histogram(table: dashboard.QueryTable) -> charts.Chart:
    """How a run's defined NDCG@k values spread, with the undefined ones counted."""
    return charts.histogram(table.defined, table.scores.k, table.scores.num_undefined)


def scatter(result: comparison.Comparison) -> charts.Chart | None:
    """Per-query NDCG@k of the first two compared runs, one dot per query."""
    if not result.deltas:
        return None
    first, second = result.means[0].run.name, result.means[1].run.name
    chart = charts.scatter(
        [(d.qid, d.a, d.b) for d in result.deltas], result.options.k, first, second
    )
    chart.legend = [
        charts.LegendItem(f"{second} better (above the diagonal)", "win"),
        charts.LegendItem(f"{first} better (below)", "loss"),
        charts.LegendItem("equal", "tie"),
    ]
    return chart
