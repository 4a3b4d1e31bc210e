"""Small-sample guards of the calibration figures: below a stated minimum, a figure is withheld.

The minimums are the dashboard's (services/dashboard/bands.py), so one rule holds wherever a
statistic is shown: a run's mean NDCG needs MIN_QUERIES defined queries and a mean judged@k of
MIN_JUDGED (else the dashboard says "not enough labels"); a kappa or a mean difference needs as
many compared pairs as the compare page needs queries for an interval (MIN_INTERVAL_QUERIES);
Kendall's tau needs MIN_QUERIES runs whose two means are both shown (from 2 runs tau can only
be +1 or -1, from 3 one of four values). A withheld figure is null under its own key and kept,
with the reason, under "withheld", so a script can still read it knowingly.
"""

from __future__ import annotations

from typing import Any

from ndcg_labeler.services import counted, dashboard, live, noun

MIN_PAIRS = dashboard.MIN_INTERVAL_QUERIES
MIN_RUNS = dashboard.MIN_QUERIES
PAIR_FIGURES = ("kappa_quadratic", "kappa_binary", "mean_difference")


def minimums() -> dict[str, float]:
    """The stated minimums, as the JSON and the page give them."""
    return {
        "pairs": MIN_PAIRS,
        "runs": MIN_RUNS,
        "queries": dashboard.MIN_QUERIES,
        "judged_at_k": dashboard.MIN_JUDGED,
    }


def withhold(found: dict[str, Any], key: str, reason: str) -> None:
    """Move found[key] under found["withheld"][key] with the reason; found[key] becomes None."""
    found.setdefault("withheld", {})[key] = {"value": found[key], "reason": reason}
    found[key] = None


def guard_pairs(found: dict[str, Any]) -> None:
    """Withhold the pair figures (kappas, mean difference) below MIN_PAIRS compared pairs."""
    if found["pairs"] >= MIN_PAIRS:
        return
    reason = f"from {counted(found['pairs'], 'compared pair')}; at least {MIN_PAIRS} are needed"
    for key in PAIR_FIGURES:
        if found[key] is not None:
            withhold(found, key, reason)


def run_row(name: str, people: live.RunScores, machine: live.RunScores, k: int) -> dict[str, Any]:
    """One run's means under human and machine labels, each withheld on thin evidence."""
    row: dict[str, Any] = {"run": name}
    for side, scores in (("human", people), ("machine", machine)):
        key = f"{side}_mean_ndcg"
        row[key] = scores.mean_ndcg
        row[f"{side}_queries"] = scores.queries_in_mean
        row[f"{side}_judged_at_k"] = scores.mean_judged_at_k
        judged = scores.mean_judged_at_k
        if scores.mean_ndcg is not None and (
            scores.queries_in_mean < dashboard.MIN_QUERIES
            or judged is None
            or judged < dashboard.MIN_JUDGED
        ):
            withhold(
                row,
                key,
                f"{dashboard.NOT_ENOUGH}: {scores.queries_in_mean} defined "
                f"{noun(scores.queries_in_mean, 'query', 'queries')}, mean "
                f"judged@{k} {0 if judged is None else judged:.0%}; at least "
                f"{dashboard.MIN_QUERIES} and {dashboard.MIN_JUDGED:.0%} are needed",
            )
    return row


def tau_runs(rows: list[dict[str, Any]]) -> tuple[list[float], list[float], bool]:
    """(human means, machine means, enough) of the runs whose two means are both shown, or of
    every run with two means when fewer than MIN_RUNS are shown (for the withheld value)."""
    shown = [
        r for r in rows if r["human_mean_ndcg"] is not None and r["machine_mean_ndcg"] is not None
    ]
    if len(shown) >= MIN_RUNS:
        return [r["human_mean_ndcg"] for r in shown], [r["machine_mean_ndcg"] for r in shown], True
    raw = [(_value(r, "human_mean_ndcg"), _value(r, "machine_mean_ndcg")) for r in rows]
    usable = [(h, m) for h, m in raw if h is not None and m is not None]
    return [h for h, _ in usable], [m for _, m in usable], False


def _value(row: dict[str, Any], key: str) -> Any:
    """A row's figure, shown or withheld."""
    if row[key] is not None:
        return row[key]
    return row.get("withheld", {}).get(key, {}).get("value")
