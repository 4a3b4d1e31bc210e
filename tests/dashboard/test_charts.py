"""Server-rendered SVG charts: counts by hand, accessible markup, no style attributes."""

from __future__ import annotations

import re

from flask import Flask, render_template_string

from ndcg_labeler.views import charts

RENDER = '{% from "dashboard/_macros.html" import chart %}{{ chart(c, "t") }}'


def _bars(chart: charts.Chart) -> list[str]:
    return [m.title or "" for m in chart.marks if m.tag == "rect"]


def test_histogram_counts_and_bands() -> None:
    chart = charts.histogram([0.0, 0.05, 0.45, 0.5, 0.95, 1.0, 1.0], k=10, undefined=2)
    bars = _bars(chart)
    assert len(bars) == 10
    assert bars[0] == "NDCG@10 0.0–0.1: 2 queries"
    assert bars[4] == "NDCG@10 0.4–0.5: 1 query"
    assert bars[5] == "NDCG@10 0.5–0.6: 1 query"
    assert bars[9] == "NDCG@10 0.9–1.0: 3 queries"  # 1.0 falls in the last bin
    classes = [dict(m.attrs)["class"] for m in chart.marks if m.tag == "rect"]
    assert classes[0] == "bar fill-poor" and classes[5] == "bar fill-fair"
    assert classes[7] == "bar fill-good" and classes[9] == "bar fill-excellent"
    assert "2 queries with undefined NDCG are not shown" in chart.desc


def test_line_over_k_skips_undefined_points() -> None:
    chart = charts.line_over_k([1, 3, 5], [("A", [0.5, None, 0.75]), ("B", [1.0, 1.0, 1.0])])
    dots = [m.title for m in chart.marks if m.tag == "circle"]
    assert dots == [
        "A: mean NDCG@1 = 0.5000",
        "A: mean NDCG@5 = 0.7500",
        "B: mean NDCG@1 = 1.0000",
        "B: mean NDCG@3 = 1.0000",
        "B: mean NDCG@5 = 1.0000",
    ]
    assert [item.label for item in chart.legend] == ["A", "B"]
    assert "A: k=1 0.5000, k=3 undefined, k=5 0.7500" in chart.desc


def test_scatter_dots_and_density_grid() -> None:
    small = charts.scatter([("q1", 0.2, 0.8), ("q2", 0.9, 0.1), ("q3", 0.5, 0.5)], 10, "A", "B")
    dots = {m.title: dict(m.attrs)["class"] for m in small.marks if m.tag == "circle"}
    assert dots == {
        "q1: A 0.2000, B 0.8000": "dot win",
        "q2: A 0.9000, B 0.1000": "dot loss",
        "q3: A 0.5000, B 0.5000": "dot tie",
    }
    assert "1 lie above the diagonal (B better), 1 below it (A better), 1 on it." in small.desc
    many = [(f"q{i}", (i % 100) / 100, ((i * 7) % 100) / 100) for i in range(charts.MAX_DOTS + 1)]
    grid = charts.scatter(many, 10, "A", "B")
    cells = [m for m in grid.marks if m.tag == "rect"]
    assert not [m for m in grid.marks if m.tag == "circle"]
    assert sum(int(m.title.split()[0]) for m in cells) == len(many)
    assert "density grid" in grid.desc


def test_rendered_svg_is_accessible_and_escaped(app: Flask) -> None:
    chart = charts.scatter([("<script>x</script>", 0.25, 0.75)], 5, "A&B", "B")
    with app.test_request_context():
        html = render_template_string(RENDER, c=chart)
    assert 'role="img"' in html and 'aria-labelledby="t-title t-desc"' in html
    assert '<title id="t-title">NDCG@5 per query: A&amp;B (x) against B (y)</title>' in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<script>" not in html
    assert "style=" not in html  # the CSP forbids style attributes
    assert re.search(r'<circle cx="\d+\.\d" cy="\d+\.\d" r="4" class="dot win">', html)


def _trend_point(label: str) -> charts.TrendPoint:
    return charts.TrendPoint(label, 0.5, 0.4, 0.6, 1.0, "", None, label)


def _x_labels(chart: charts.Chart) -> list[tuple[str, str]]:
    """(text, text-anchor) of the x axis' tick labels (the y ticks are anchored at the end,
    left of the plot)."""
    ticks = [m for m in chart.marks if m.tag == "text" and dict(m.attrs)["class"] == "tick"]
    below = [m for m in ticks if float(dict(m.attrs)["x"]) >= charts.LEFT]
    return [(m.text or "", dict(m.attrs)["text-anchor"]) for m in below]


def test_trend_labels_tell_a_series_runs_apart_and_stay_inside_the_chart() -> None:
    # A scheduled series names its runs SERIES-YYYY-MM-DD-HHMM: cut to their first 11
    # characters every label read "nightly-202…", and the last one, centred on the plot's
    # right edge, ran past the chart's border and was clipped.
    names = [f"nightly-2026-11-{day:02d}-0300" for day in (24, 25, 26)]
    chart = charts.trend("nightly", 10, [_trend_point(name) for name in names])
    assert _x_labels(chart) == [
        ("24-0300", "middle"),
        ("25-0300", "middle"),
        ("26-0300", "end"),
    ]
    titles = [m.text for m in chart.marks if m.tag == "text"]
    assert "run (oldest first), names after “nightly-2026-11-”" in titles
    short = charts.trend("nightly", 10, [_trend_point(f"nightly-{n}") for n in (1, 2)])
    assert _x_labels(short) == [("1", "middle"), ("2", "end")]
    # Nothing in common up to a separator: each name as it is, cut to 12 characters.
    mixed = ("bm25", "bm25-tuned", "dense-embeddings-v2")
    chart = charts.trend("s", 10, [_trend_point(n) for n in mixed])
    assert [text for text, _ in _x_labels(chart)] == ["bm25", "bm25-tuned", "dense-embed…"]
    assert "run (oldest first)" in [m.text for m in chart.marks if m.tag == "text"]
    # One run: its name, centred.
    assert _x_labels(charts.trend("s", 10, [_trend_point("nightly-1")])) == [
        ("nightly-1", "middle")
    ]
