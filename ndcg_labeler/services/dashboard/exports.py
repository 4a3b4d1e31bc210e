"""Dashboard exports: every table as CSV (csv module) with the JSON's numbers, qrels as TREC.

Floats are written with repr(), the shortest text that reads back as the same double, so a CSV
cell equals the JSON value (and `flask run score --json`) exactly; None is an empty cell.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ndcg_labeler.formats import safe_cell
from ndcg_labeler.services.dashboard.drilldown import DrillDown
from ndcg_labeler.services.dashboard.overview import Overview
from ndcg_labeler.services.live import MeasureValues, RunScores

_PLAIN_NUMBER = re.compile(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?")


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str) and not _PLAIN_NUMBER.fullmatch(value):
        return safe_cell(value)  # a query text "=HYPERLINK(...)" must not run in a spreadsheet
    return value


def to_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A CSV document (RFC 4180 quoting, \\r\\n line ends as the csv module writes them)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([_cell(name) for name in header])  # a header may hold a run's name
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def overview_csv(overview: Overview) -> str:
    """The overview's runs table."""
    data = overview.to_json()
    keys = ("run", "mean_ndcg", "n", "ci_low", "ci_high", "ci_method", "queries_in_mean")
    keys += ("queries", "undefined", "missing", "judged_at_k", "mean_trec_all", "queries_trec_all")
    keys += ("mean_if_unjudged_top", "mean_condensed")
    settings = [data[name] for name in ("k", "gain", "ideal", "aggregation")]
    header = [*keys, "k", "gain", "ideal", "aggregation"]
    return to_csv(header, ([*(r[key] for key in keys), *settings] for r in data["runs"]))


def run_csv(scores: RunScores, extra: Sequence[MeasureValues] = ()) -> str:
    """A run's per-query scores in the CLI's JSON order (gap descending, then qid); the
    measures asked for (`extra`, ?measure=) as more columns, each named as it was asked for."""
    texts = scores.texts()
    ids = dict(zip(scores.qids, scores.query_ids.tolist(), strict=True))
    queries = scores.to_json()["queries"]
    header = [
        "qid",
        "query",
        "ndcg",
        "dcg",
        "idcg",
        "gap",
        "one_minus_ndcg",
        "judged_at_k",
        "num_rel",
        "missing",
        "ndcg_if_unjudged_top",
        "ndcg_condensed",
        *(m.measure.shown for m in extra),
    ]
    named = [m.by_qid() for m in extra]
    missing = {q for q, m in zip(scores.qids, scores.missing.tolist(), strict=True) if m}
    return to_csv(
        header,
        (
            [
                q["qid"],
                texts.get(ids[q["qid"]], ""),
                q["ndcg"],
                q["dcg"],
                q["idcg"],
                q["gap"],
                None if q["ndcg"] is None else 1.0 - q["ndcg"],
                q["judged_at_k"],
                q["num_rel"],
                q["qid"] in missing,
                q["ndcg_if_unjudged_top"],
                q["ndcg_condensed"],
                *(values.get(q["qid"]) for values in named),
            ]
            for q in queries
        ),
    )


def drill_down_csv(view: DrillDown) -> str:
    """A query's run top k and ideal top k, one row per rank."""
    header = ["list", "rank", "docid", "grade", "gain", "discount", "contribution", "cumulative"]
    detail = view.detail
    rows = [
        [name, r.rank, r.docid, r.grade, r.gain, r.discount, r.contribution, r.cumulative]
        for name, items in (("run", detail.ranked), ("ideal", detail.ideal))
        for r in items
    ]
    return to_csv(header, rows)
