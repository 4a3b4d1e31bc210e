"""Server-rendered SVG charts: element data (tag, attributes, tooltip) for a Jinja macro.

No chart library and no script: each chart is a list of Marks in a fixed viewBox, drawn by
templates/dashboard/_charts.html. Colours come from classes in app.css or SVG presentation
attributes (the CSP forbids style attributes). Every chart has a title and a description for
screen readers, every data mark a <title> tooltip.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ndcg_labeler.services import dashboard

WIDTH = 640
HEIGHT = 320
# Plot area margins: room for tick labels on the left and below, and for the axis titles.
LEFT, RIGHT, TOP, BOTTOM = 64, 20, 16, 56
# Past this many points a scatter plot draws a density grid instead of one dot per query.
MAX_DOTS = 1500
SQUARE = 480  # the scatter plot's side: both axes run from 0 to 1
GRID_CELLS = 40


@dataclass(frozen=True)
class Mark:
    """One SVG element: its tag, attributes (names are ours, values are escaped) and tooltip."""

    tag: str
    attrs: tuple[tuple[str, str], ...]
    title: str | None = None
    text: str | None = None
    href: str | None = None  # the mark is a link (drawn inside <a href>)


@dataclass(frozen=True)
class LegendItem:
    """A series name and the class that colours it."""

    label: str
    css: str


@dataclass
class Chart:
    """A chart: title and description (accessibility), the marks, and an HTML legend."""

    title: str
    desc: str
    marks: list[Mark] = field(default_factory=list)
    legend: list[LegendItem] = field(default_factory=list)
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def view_box(self) -> str:
        """The SVG viewBox."""
        return f"0 0 {self.width} {self.height}"


def _f(value: float) -> str:
    return f"{value:.1f}"


def _mark(tag: str, title: str | None = None, text: str | None = None, **attrs: object) -> Mark:
    """A Mark from keyword attributes (a trailing underscore is dropped: class_ -> class)."""
    pairs = tuple(
        (name.rstrip("_").replace("_", "-"), _f(v) if isinstance(v, float) else str(v))
        for name, v in attrs.items()
    )
    return Mark(tag, pairs, title, text)


class _Frame:
    """Maps data coordinates to the plot area and draws the axes."""

    def __init__(
        self,
        x_range: tuple[float, float],
        y_range: tuple[float, float],
        width: int = WIDTH,
        height: int = HEIGHT,
    ) -> None:
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_range
        self.height = height
        self.left, self.right = LEFT, width - RIGHT
        self.top, self.bottom = TOP, height - BOTTOM

    def x(self, value: float) -> float:
        """Data x to SVG x."""
        span = (self.x1 - self.x0) or 1.0
        return self.left + (value - self.x0) / span * (self.right - self.left)

    def y(self, value: float) -> float:
        """Data y to SVG y (up is larger)."""
        span = (self.y1 - self.y0) or 1.0
        return self.bottom - (value - self.y0) / span * (self.bottom - self.top)

    def axes(
        self,
        x_ticks: Sequence[tuple[float, str]],
        y_ticks: Sequence[tuple[float, str]],
        x_label: str,
        y_label: str,
    ) -> list[Mark]:
        """Grid lines, tick labels and axis titles; a tick label on the plot's right edge ends
        there (centred, it would run past the chart's border and be clipped)."""
        marks = []
        for value, label in y_ticks:
            y = self.y(value)
            marks.append(_mark("line", x1=self.left, x2=self.right, y1=y, y2=y, class_="grid"))
            marks.append(
                _mark(
                    "text", text=label, x=self.left - 8, y=y + 4, text_anchor="end", class_="tick"
                )
            )
        for value, label in x_ticks:
            x = self.x(value)
            anchor = "end" if x >= self.right and x > self.left else "middle"
            marks.append(
                _mark(
                    "text", text=label, x=x, y=self.bottom + 18, text_anchor=anchor, class_="tick"
                )
            )
        marks.append(
            _mark(
                "line", x1=self.left, x2=self.right, y1=self.bottom, y2=self.bottom, class_="axis"
            )
        )
        marks.append(
            _mark("line", x1=self.left, x2=self.left, y1=self.top, y2=self.bottom, class_="axis")
        )
        marks.append(
            _mark(
                "text",
                text=x_label,
                x=(self.left + self.right) / 2,
                y=self.height - 12,
                text_anchor="middle",
                class_="axis-label",
            )
        )
        mid = (self.top + self.bottom) / 2
        marks.append(
            _mark(
                "text",
                text=y_label,
                x=16.0,
                y=mid,
                text_anchor="middle",
                transform=f"rotate(-90 16 {_f(mid)})",
                class_="axis-label",
            )
        )
        return marks


def _nice_step(top: float, ticks: int = 5) -> float:
    """A round step (1, 2, 5 × 10^n) that splits 0..top into about `ticks` parts."""
    if top <= 0:
        return 1.0
    raw = top / ticks
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * power >= raw:
            return factor * power
    return 10 * power


def _count_ticks(top: int) -> tuple[int, list[tuple[float, str]]]:
    """A y axis for counts: its maximum and whole-number ticks."""
    step = max(1, int(_nice_step(max(top, 1))))
    maximum = max(step, -(-max(top, 1) // step) * step)
    return maximum, [(float(v), str(v)) for v in range(0, maximum + 1, step)]


UNIT_TICKS = [(v / 10, f"{v / 10:.1f}") for v in range(0, 11, 2)]


def histogram(values: Sequence[float], k: int, undefined: int, bins: int = 10) -> Chart:
    """Distribution of per-query NDCG@k over [0, 1] in `bins` bins (1.0 in the last bin)."""
    counts = [0] * bins
    for value in values:
        counts[min(int(value * bins), bins - 1)] += 1
    maximum, y_ticks = _count_ticks(max(counts, default=0))
    frame = _Frame((0.0, 1.0), (0.0, float(maximum)))
    chart = Chart(
        title=f"Distribution of NDCG@{k} over {len(values)} queries",
        desc=(
            f"Histogram of per-query NDCG@{k} in {bins} bins from 0 to 1; "
            + ", ".join(f"{i / bins:.1f}–{(i + 1) / bins:.1f}: {c}" for i, c in enumerate(counts))
            + f". {undefined} queries with undefined NDCG are not shown."
        ),
    )
    x_ticks = [(i / bins, f"{i / bins:.1f}") for i in range(0, bins + 1, max(1, bins // 5))]
    chart.marks.extend(frame.axes(x_ticks, y_ticks, f"NDCG@{k}", "queries"))
    for i, count in enumerate(counts):
        low, high = i / bins, (i + 1) / bins
        x, end = frame.x(low) + 1, frame.x(high) - 1
        y = frame.y(float(count))
        noun = "query" if count == 1 else "queries"
        chart.marks.append(
            _mark(
                "rect",
                title=f"NDCG@{k} {low:.1f}–{high:.1f}: {count} {noun}",
                x=x,
                y=y,
                width=end - x,
                height=frame.bottom - y,
                class_=f"bar fill-{dashboard.band(low + 1e-9)}",
            )
        )
    return chart


def line_over_k(
    ks: Sequence[int],
    series: Sequence[tuple[str, Sequence[float | None]]],
    kept_depths: Sequence[int | None] = (),
) -> Chart:
    """Mean NDCG@k of each series as k grows (k evenly spaced, as categories); `kept_depths`
    (one per series, None: whole) tells a cutoff an archived run dropped from an undefined
    mean."""
    kept = list(kept_depths) + [None] * (len(series) - len(kept_depths))

    def point(k: int, value: float | None, depth: int | None) -> str:
        if value is not None:
            return f"k={k} {value:.4f}"
        if depth is not None and k > depth:
            return f"k={k} not kept (archived at top {depth})"
        return f"k={k} undefined"

    frame = _Frame((0.0, float(max(len(ks) - 1, 1))), (0.0, 1.0))
    chart = Chart(
        title="Mean NDCG@k as k grows",
        desc="; ".join(
            f"{name}: " + ", ".join(point(k, v, depth) for k, v in zip(ks, values, strict=True))
            for (name, values), depth in zip(series, kept, strict=True)
        )
        or "No runs.",
    )
    x_ticks = [(float(i), str(k)) for i, k in enumerate(ks)]
    chart.marks.extend(frame.axes(x_ticks, UNIT_TICKS, "k", "mean NDCG@k"))
    for s, (name, values) in enumerate(series):
        css = f"series-{s % 6}"
        points = [(frame.x(float(i)), frame.y(v)) for i, v in enumerate(values) if v is not None]
        if len(points) > 1:
            chart.marks.append(
                _mark(
                    "polyline",
                    points=" ".join(f"{_f(x)},{_f(y)}" for x, y in points),
                    class_=f"line {css}",
                )
            )
        for i, v in enumerate(values):
            if v is None:
                continue
            chart.marks.append(
                _mark(
                    "circle",
                    title=f"{name}: mean NDCG@{ks[i]} = {v:.4f}",
                    cx=frame.x(float(i)),
                    cy=frame.y(v),
                    r=4,
                    class_=f"dot {css}",
                )
            )
        depth = kept[s]
        cut = depth is not None and any(k > depth for k in ks)
        label = f"{name} (archived at top {depth}: no mean past k={depth})" if cut else name
        chart.legend.append(LegendItem(label, css))
    return chart


def scatter(points: Sequence[tuple[str, float, float]], k: int, name_a: str, name_b: str) -> Chart:
    """Run A's NDCG@k (x) against run B's (y) per query; above the diagonal B is better."""
    frame = _Frame((0.0, 1.0), (0.0, 1.0), SQUARE, SQUARE)
    above = sum(1 for _, a, b in points if b > a)
    below = sum(1 for _, a, b in points if b < a)
    chart = Chart(
        title=f"NDCG@{k} per query: {name_a} (x) against {name_b} (y)",
        desc=(
            f"{len(points)} queries. {above} lie above the diagonal ({name_b} better), "
            f"{below} below it ({name_a} better), {len(points) - above - below} on it."
        ),
        width=SQUARE,
        height=SQUARE,
    )
    chart.marks.extend(
        frame.axes(UNIT_TICKS, UNIT_TICKS, f"NDCG@{k} of {name_a}", f"NDCG@{k} of {name_b}")
    )
    chart.marks.append(
        _mark(
            "line",
            x1=frame.x(0.0),
            y1=frame.y(0.0),
            x2=frame.x(1.0),
            y2=frame.y(1.0),
            class_="diagonal",
        )
    )
    if len(points) <= MAX_DOTS:
        for qid, a, b in points:
            chart.marks.append(
                _mark(
                    "circle",
                    title=f"{qid}: {name_a} {a:.4f}, {name_b} {b:.4f}",
                    cx=frame.x(a),
                    cy=frame.y(b),
                    r=4,
                    class_="dot " + ("win" if b > a else "loss" if b < a else "tie"),
                )
            )
        return chart
    chart.marks.extend(_density(points, frame))
    chart.desc += f" Drawn as a {GRID_CELLS}×{GRID_CELLS} density grid."
    return chart


def _density(points: Sequence[tuple[str, float, float]], frame: _Frame) -> list[Mark]:
    """Cells of a grid shaded by how many queries fall in them (for many points)."""
    cells: dict[tuple[int, int], int] = {}
    for _, a, b in points:
        key = (min(int(a * GRID_CELLS), GRID_CELLS - 1), min(int(b * GRID_CELLS), GRID_CELLS - 1))
        cells[key] = cells.get(key, 0) + 1
    top = max(cells.values(), default=1)
    size = 1.0 / GRID_CELLS
    marks = []
    for (i, j), count in sorted(cells.items()):
        x, y = frame.x(i * size), frame.y((j + 1) * size)
        marks.append(
            _mark(
                "rect",
                title=(
                    f"{count} queries with x {i * size:.3f}–{(i + 1) * size:.3f}, "
                    f"y {j * size:.3f}–{(j + 1) * size:.3f}"
                ),
                x=x,
                y=y,
                width=frame.x((i + 1) * size) - x,
                height=frame.y(j * size) - y,
                # Presentation attribute, not a style: allowed by the CSP.
                fill_opacity=f"{0.15 + 0.85 * count / top:.2f}",
                class_="cell",
            )
        )
    return marks


@dataclass(frozen=True)
class TrendPoint:
    """One run of a series as the trend chart draws it."""

    label: str
    mean: float | None
    low: float | None
    high: float | None
    judged: float | None
    change: str  # "up", "down" or "" (not significant)
    href: str | None
    note: str


# At most this many run names under the x axis (every run still has its point and tooltip).
TREND_LABELS = 8
# Characters a run name may end at, to drop what every name of a series shares.
NAME_SEPARATORS = "-_.:/ "


def _shared_prefix(labels: Sequence[str]) -> str:
    """What two or more labels share up to and including their last common separator (the
    runs of a series are usually named SERIES-DATE...: shown cut to 12 characters, they all
    read the same); "" when they share none or it would leave a label empty."""
    if len(labels) < 2:
        return ""
    common = labels[0]
    for label in labels[1:]:
        while not label.startswith(common):
            common = common[:-1]
    cut = max(common.rfind(sep) for sep in NAME_SEPARATORS) + 1
    return common[:cut] if all(len(label) > cut for label in labels) else ""


def _short(label: str) -> str:
    """A tick label of at most 12 characters."""
    return label if len(label) <= 12 else label[:11] + "…"


def trend(name: str, k: int, points: Sequence[TrendPoint]) -> Chart:
    """Mean NDCG@k (95% interval as a bar) and judged@k of a series' runs in upload order;
    a significant change against the previous run is ringed; each mean links to its comparison."""
    frame = _Frame((0.0, float(max(len(points) - 1, 1))), (0.0, 1.0))
    changed = [p.label for p in points if p.change]
    chart = Chart(
        title=f"Series {name}: mean NDCG@{k} and judged@{k} over {len(points)} runs",
        desc=(
            "; ".join(
                f"{p.label}: NDCG@{k} {'undefined' if p.mean is None else f'{p.mean:.4f}'}"
                + (f" (95% CI {p.low:.4f}–{p.high:.4f})" if p.low is not None else "")
                + (f", judged@{k} {p.judged:.3f}" if p.judged is not None else "")
                + (f", significant change {p.change}" if p.change else "")
                for p in points
            )
            or "No runs."
        )
        + (f". Significant changes: {', '.join(changed)}." if changed else ""),
    )
    every = max(1, -(-len(points) // TREND_LABELS))
    shown = [(float(i), p.label) for i, p in enumerate(points) if i % every == 0]
    prefix = _shared_prefix([label for _, label in shown])
    x_ticks = [(i, _short(label[len(prefix) :])) for i, label in shown]
    x_title = "run (oldest first)" + (f", names after “{prefix}”" if prefix else "")
    chart.marks.extend(frame.axes(x_ticks, UNIT_TICKS, x_title, f"NDCG@{k}"))
    for css, values in (
        ("series-1", [p.judged for p in points]),
        ("series-0", [p.mean for p in points]),
    ):
        line = [(frame.x(float(i)), frame.y(v)) for i, v in enumerate(values) if v is not None]
        if len(line) > 1:
            chart.marks.append(
                _mark(
                    "polyline",
                    points=" ".join(f"{_f(x)},{_f(y)}" for x, y in line),
                    class_=f"line {css}",
                )
            )
    for i, p in enumerate(points):
        x = frame.x(float(i))
        if p.low is not None and p.high is not None:
            chart.marks.append(
                _mark("line", x1=x, x2=x, y1=frame.y(p.low), y2=frame.y(p.high), class_="ci")
            )
        if p.judged is not None:
            chart.marks.append(
                _mark(
                    "rect",
                    title=f"{p.label}: judged@{k} {p.judged:.3f}",
                    x=x - 3,
                    y=frame.y(p.judged) - 3,
                    width=6,
                    height=6,
                    class_="dot series-1",
                )
            )
        if p.mean is None:
            continue
        if p.change:
            chart.marks.append(
                _mark("circle", cx=x, cy=frame.y(p.mean), r=9, class_=f"change {p.change}")
            )
        mark = _mark("circle", title=p.note, cx=x, cy=frame.y(p.mean), r=5, class_="dot series-0")
        chart.marks.append(Mark(mark.tag, mark.attrs, mark.title, None, p.href))
    chart.legend.extend(
        [
            LegendItem(f"mean NDCG@{k} (bar: 95% interval)", "series-0"),
            LegendItem(f"judged@{k}", "series-1"),
        ]
    )
    return chart
