"""Charts drawn on the server as SVG geometry that the templates render:
no JavaScript, no CDN, readable without scripts and printable.

Scores are on the rubric's 1-10 scale.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

SCALE_MIN = 1.0
SCALE_MAX = 10.0

# The content width of a data page at 1366 px, in SVG user units: the charts are
# drawn at it and scaled to the box (CSS width: 100%), so 1 unit is about 1 px.
CHART_WIDTH = 1280
# The mean width of a 12 px system-ui character, rounded up: labels are laid out
# by it, and one that would not fit is shortened (its full text on hover).
CHAR_PX = 7.2


def label_width(labels: list[str], *, most: int = 360, least: int = 80) -> int:
    """Room for the longest label (up to `most`) plus a gap to the plot."""
    longest = max((len(label) for label in labels), default=0)
    return min(max(math.ceil(longest * CHAR_PX) + 16, least), most)


def label_fit(label: str, width: float) -> str:
    """`label` shortened with an ellipsis to fit `width` units (a gap of 16 kept)."""
    room = max(int((width - 16) / CHAR_PX), 4)
    return label if len(label) <= room else label[: room - 1].rstrip() + "…"


class _Axes:
    """Where a chart's row labels and its axis' tick labels are drawn (a mixin of
    the charts whose rows are labelled on the left)."""

    left: int
    axis_y: float

    @property
    def label_x(self) -> int:
        return self.left - 8

    @property
    def tick_y(self) -> float:
        return self.axis_y + 14


@dataclass(frozen=True)
class IntervalPoint:
    label: str
    short: str  # the label as drawn, shortened to its column
    href: str
    y: float
    x: float
    low: float | None
    high: float | None
    value: float
    interval: tuple[float, float] | None
    above_line: bool


@dataclass(frozen=True)
class IntervalChart(_Axes):
    width: int
    height: int
    left: int
    right: int
    points: list[IntervalPoint]
    ticks: list[tuple[float, int]]
    line_x: float | None
    line_value: float | None
    axis_y: float


def _x(value: float, left: int, right: int) -> float:
    clamped = min(max(value, SCALE_MIN), SCALE_MAX)
    return round(left + (clamped - SCALE_MIN) / (SCALE_MAX - SCALE_MIN) * (right - left), 1)


def interval_chart(
    items: list[tuple[str, str, float, tuple[float, float] | None]],
    *,
    line: float | None = None,
    width: int = CHART_WIDTH,
    row_height: int = 22,
) -> IntervalChart:
    """One row per `(label, href, value, interval)`: a dot at the value and
    whiskers over the interval, with an optional vertical line (6.0)."""
    left, right = label_width([label for label, *_rest in items]), width - 20
    points = []
    for i, (label, href, value, interval) in enumerate(items):
        points.append(
            IntervalPoint(
                label=label,
                short=label_fit(label, left),
                href=href,
                y=10 + i * row_height + row_height / 2,
                x=_x(value, left, right),
                low=_x(interval[0], left, right) if interval else None,
                high=_x(interval[1], left, right) if interval else None,
                value=value,
                interval=interval,
                above_line=line is not None and value >= line,
            )
        )
    axis_y = 10 + len(items) * row_height + 4
    return IntervalChart(
        width=width,
        height=int(axis_y + 24),
        left=left,
        right=right,
        points=points,
        ticks=[(_x(v, left, right), v) for v in range(1, 11)],
        line_x=_x(line, left, right) if line is not None else None,
        line_value=line,
        axis_y=axis_y,
    )


@dataclass(frozen=True)
class HeatCell:
    x: int
    y: int
    width: int
    height: int
    value: float | None
    fill: str
    text_fill: str

    @property
    def centre_x(self) -> float:
        return self.x + self.width / 2

    @property
    def centre_y(self) -> float:
        return self.y + self.height / 2


@dataclass(frozen=True)
class Heatmap:
    width: int
    height: int
    columns: list[tuple[float, str, str]]  # (x, label, label as drawn)
    rows: list[tuple[float, str, str, str]]  # (y, label, href, label as drawn)
    cells: list[HeatCell]
    cell_width: int
    cell_height: int
    label_width: int

    @property
    def label_x(self) -> int:
        return self.label_width - 8


def heat_colour(value: float | None) -> tuple[str, str]:
    """Fill and text colour: red below the acceptance line, blue above, white around 5.5."""
    if value is None:
        return "#f1f2f5", "#5b6475"
    t = (min(max(value, SCALE_MIN), SCALE_MAX) - SCALE_MIN) / (SCALE_MAX - SCALE_MIN)
    low, mid, high = (178, 54, 44), (247, 247, 247), (41, 82, 163)
    if t < 0.5:
        a, b, u = low, mid, t / 0.5
    else:
        a, b, u = mid, high, (t - 0.5) / 0.5
    r, g, bl = (round(a[i] + (b[i] - a[i]) * u) for i in range(3))
    text = "#ffffff" if abs(t - 0.5) > 0.3 else "#1d2330"
    return f"rgb({r},{g},{bl})", text


def heatmap(
    row_labels: list[tuple[str, str]],
    column_labels: list[str],
    values: list[list[float | None]],
    *,
    width: int = CHART_WIDTH,
    cell_height: int = 24,
    header_height: int = 28,
) -> Heatmap:
    """Rows (e.g. agents, with a link) by columns (dimensions), coloured by score;
    the columns share the width the row labels leave."""
    left = label_width([label for label, _href in row_labels])
    cell_width = min(max((width - 4 - left) // max(len(column_labels), 1), 48), 240)
    cells = []
    for r, row in enumerate(values):
        for c, value in enumerate(row):
            fill, text = heat_colour(value)
            cells.append(
                HeatCell(
                    x=left + c * cell_width,
                    y=header_height + r * cell_height,
                    width=cell_width - 2,
                    height=cell_height - 2,
                    value=value,
                    fill=fill,
                    text_fill=text,
                )
            )
    return Heatmap(
        width=left + len(column_labels) * cell_width + 4,
        height=header_height + len(row_labels) * cell_height + 4,
        columns=[
            (left + c * cell_width + cell_width / 2, label, label_fit(label, cell_width + 8))
            for c, label in enumerate(column_labels)
        ],
        rows=[
            (header_height + r * cell_height + cell_height / 2, label, href, label_fit(label, left))
            for r, (label, href) in enumerate(row_labels)
        ],
        cells=cells,
        cell_width=cell_width,
        cell_height=cell_height,
        label_width=left,
    )


# --- shares by type (the fabrication page) ----------------------------------------------


@dataclass(frozen=True)
class ShareBar:
    label: str  # the type, in words
    css: str  # the type key, for its colour
    x: float
    y: float
    width: float
    height: float
    value: float | None
    low_x: float | None
    high_x: float | None


@dataclass(frozen=True)
class ShareGroup:
    label: str
    short: str
    label_y: float
    bars: list[ShareBar]


@dataclass(frozen=True)
class ShareChart(_Axes):
    width: int
    height: int
    left: int
    right: int
    groups: list[ShareGroup]
    ticks: list[tuple[float, str]]
    axis_y: float
    legend: list[tuple[str, str]]  # (css, label)


def share_chart(
    groups: list[tuple[str, list[tuple[str, str, float | None, tuple[float, float] | None]]]],
    *,
    width: int = CHART_WIDTH,
    bar_height: int = 10,
) -> ShareChart:
    """One group per `(label, [(type key, type label, share, interval), ...])`: a bar
    per type from 0 to its share (0-1), with its interval as a whisker; a type with
    no share (nothing checked) has no bar."""
    left, right = label_width([label for label, _bars in groups], most=420), width - 24
    top = 8
    result: list[ShareGroup] = []
    y = top
    for label, bars in groups:
        drawn = []
        for index, (key, type_label, value, interval) in enumerate(bars):
            bar_y = y + index * (bar_height + 2)

            def x(share: float) -> float:
                return round(left + min(max(share, 0.0), 1.0) * (right - left), 1)

            drawn.append(
                ShareBar(
                    label=type_label,
                    css=key,
                    x=left,
                    y=bar_y,
                    width=round(x(value) - left, 1) if value is not None else 0.0,
                    height=bar_height,
                    value=value,
                    low_x=x(interval[0]) if interval else None,
                    high_x=x(interval[1]) if interval else None,
                )
            )
        span = len(bars) * (bar_height + 2)
        result.append(
            ShareGroup(
                label=label, short=label_fit(label, left), label_y=y + span / 2 + 4, bars=drawn
            )
        )
        y += span + 12
    axis_y = y
    ticks = [
        (round(left + share * (right - left), 1), f"{int(share * 100)}%")
        for share in (0.0, 0.25, 0.5, 0.75, 1.0)
    ]
    legend = [(key, type_label) for key, type_label, _v, _i in groups[0][1]] if groups else []
    return ShareChart(width, int(axis_y + 24), left, right, result, ticks, axis_y, legend)


@dataclass(frozen=True)
class CostPoint:
    label: str
    short: str
    # Where the label goes: right of the point, or left of it near the right edge.
    label_x: float
    anchor: str
    href: str
    x: float
    y: float
    y_low: float | None
    y_high: float | None
    cost: float
    score: float
    pareto: bool
    # The cost is a lower bound: some LLM steps had no price.
    lower_bound: bool


@dataclass(frozen=True)
class CostChart:
    """Mean cost per task (log scale) against Overall, with the Pareto frontier."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    points: list[CostPoint]
    frontier: str  # an SVG polyline's points
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, int]]
    line_y: float | None

    @property
    def tick_y(self) -> int:
        return self.bottom + 16


def _log_ticks(low: float, high: float) -> list[float]:
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    return [10.0**e * m for e in range(first, last + 1) for m in (1, 2, 5)]


def cost_chart(
    items: list[tuple[str, str, float, float, tuple[float, float] | None, bool, bool]],
    *,
    line: float | None = None,
    width: int = CHART_WIDTH,
    height: int = 420,
) -> CostChart:
    """One point per `(label, href, cost, score, interval, pareto, lower_bound)`
    (costs > 0); the frontier joins the Pareto points from cheapest to dearest.

    Long because the chart's axes, frontier and points are laid out in one coordinate system."""
    left, right, top, bottom = 56, width - 20, 24, height - 36
    costs = [cost for _l, _h, cost, *_rest in items] or [1.0]
    low, high = min(costs) / 1.5, max(costs) * 1.5
    span = math.log10(high) - math.log10(low)

    def x_of(cost: float) -> float:
        return round(left + (math.log10(cost) - math.log10(low)) / span * (right - left), 1)

    def y_of(score: float) -> float:
        clamped = min(max(score, SCALE_MIN), SCALE_MAX)
        return round(bottom - (clamped - SCALE_MIN) / (SCALE_MAX - SCALE_MIN) * (bottom - top), 1)

    def placed(label: str, x: float) -> tuple[str, float, str]:
        short = label_fit(label, 34 * CHAR_PX)
        if x + 8 + len(short) * CHAR_PX <= width - 4:
            return short, x + 8, "start"
        return short, x - 8, "end"

    points = [
        CostPoint(
            label=label,
            short=(where := placed(label, x_of(cost)))[0],
            label_x=where[1],
            anchor=where[2],
            href=href,
            x=x_of(cost),
            y=y_of(score),
            y_low=y_of(interval[0]) if interval else None,
            y_high=y_of(interval[1]) if interval else None,
            cost=cost,
            score=score,
            pareto=pareto,
            lower_bound=lower_bound,
        )
        for label, href, cost, score, interval, pareto, lower_bound in items
    ]
    frontier = sorted((p for p in points if p.pareto), key=lambda p: p.x)
    ticks = [t for t in _log_ticks(low, high) if low <= t <= high]
    if len(ticks) < 2:  # costs within one step of 1-2-5: the axis's ends, to read values off
        ticks = sorted({*ticks, float(f"{low:.2g}"), float(f"{high:.2g}")})
    return CostChart(
        width=width,
        height=height,
        left=left,
        right=right,
        top=top,
        bottom=bottom,
        points=points,
        frontier=" ".join(f"{p.x},{p.y}" for p in frontier),
        x_ticks=[(x_of(t), f"${t:g}") for t in ticks],
        y_ticks=[(y_of(v), v) for v in range(1, 11)],
        line_y=y_of(line) if line is not None else None,
    )


@dataclass(frozen=True)
class Sparkline:
    """A small line per trial over its steps (the x axis: the step within the
    trial, shared by the trials; the y axis: low to high values of all of them)."""

    width: int
    height: int
    lines: list[str]  # a polyline's `points`, one per unbroken run of values
    dots: list[tuple[float, float]]
    low: float
    high: float


def sparkline(
    trials: list[list[float | None]], *, width: int = 120, height: int = 28
) -> Sparkline | None:
    """None when no step has a value; a step without one breaks its trial's line."""
    values = [value for trial in trials for value in trial if value is not None]
    if not values:
        return None
    low, high = min(values), max(values)
    steps = max(len(trial) for trial in trials)
    pad = 3

    def point(index: int, value: float) -> tuple[float, float]:
        x = pad + (index / (steps - 1) if steps > 1 else 0.5) * (width - 2 * pad)
        y = (
            height
            - pad
            - ((value - low) / (high - low) if high > low else 0.5) * (height - 2 * pad)
        )
        return round(x, 1), round(y, 1)

    lines, dots = [], []
    for trial in trials:
        run: list[tuple[float, float]] = []
        for index, value in enumerate([*trial, None]):
            if value is not None:
                run.append(point(index, value))
                dots.append(point(index, value))
                continue
            if len(run) > 1:
                lines.append(" ".join(f"{x},{y}" for x, y in run))
            run = []
    return Sparkline(width, height, lines, dots, low, high)


# --- a framed plot: bars or dots in a box with both axes (the agreement dashboard) -------


@dataclass(frozen=True)
class PlotTick:
    x: float
    y: float
    label: str


@dataclass(frozen=True)
class PlotBar:
    x: float
    y: float
    width: float
    height: float
    fill: str
    title: str  # its text alternative


@dataclass(frozen=True)
class PlotDot:
    x: float
    y: float
    r: float
    fill: str
    title: str


@dataclass(frozen=True)
class FramedPlot:
    """A plot in a box with a title, x ticks below, y ticks (and a faint grid
    line each) on the left and both axes' names; drawn by one template."""

    title: str
    test_id: str
    width: int
    height: int
    left: int
    top: int
    plot_width: int
    plot_height: int
    x_label: str
    y_label: str
    x_ticks: list[PlotTick]
    y_ticks: list[PlotTick]
    bars: list[PlotBar]
    dots: list[PlotDot]
    # A dashed reference line (x1, y1, x2, y2), e.g. perfect agreement.
    reference: tuple[float, float, float, float] | None = None

    @property
    def right(self) -> int:
        return self.left + self.plot_width

    @property
    def x_label_x(self) -> float:
        return self.left + self.plot_width / 2

    @property
    def x_label_y(self) -> int:
        return self.height - 4

    @property
    def y_label_y(self) -> float:
        return self.top + self.plot_height / 2

    @property
    def tick_label_x(self) -> int:
        return self.left - 4


PLOT_WIDTH, PLOT_HEIGHT = 320, 200
PLOT_PAD_LEFT, PLOT_PAD_BOTTOM, PLOT_PAD_TOP, PLOT_PAD_RIGHT = 48, 30, 10, 10


def framed_plot(
    *,
    title: str,
    test_id: str,
    x_label: str,
    y_label: str,
    x_ticks: list[tuple[float, str]],
    y_ticks: list[tuple[float, str]],
    bars: Sequence[PlotBar] = (),
    dots: Sequence[PlotDot] = (),
    reference: tuple[float, float, float, float] | None = None,
) -> FramedPlot:
    """A `FramedPlot` of the standard size; ticks' positions are in plot units
    (x along the bottom, y up the left side)."""
    plot_w = PLOT_WIDTH - PLOT_PAD_LEFT - PLOT_PAD_RIGHT
    plot_h = PLOT_HEIGHT - PLOT_PAD_TOP - PLOT_PAD_BOTTOM
    return FramedPlot(
        title=title,
        test_id=test_id,
        width=PLOT_WIDTH,
        height=PLOT_HEIGHT,
        left=PLOT_PAD_LEFT,
        top=PLOT_PAD_TOP,
        plot_width=plot_w,
        plot_height=plot_h,
        x_label=x_label,
        y_label=y_label,
        x_ticks=[PlotTick(round(x, 1), PLOT_PAD_TOP + plot_h + 12, label) for x, label in x_ticks],
        y_ticks=[PlotTick(PLOT_PAD_LEFT - 4, round(y, 1), label) for y, label in y_ticks],
        bars=list(bars),
        dots=list(dots),
        reference=reference,
    )


def plot_area() -> tuple[int, int, int, int]:
    """The standard plot's box: left, top, width, height."""
    return (
        PLOT_PAD_LEFT,
        PLOT_PAD_TOP,
        PLOT_WIDTH - PLOT_PAD_LEFT - PLOT_PAD_RIGHT,
        PLOT_HEIGHT - PLOT_PAD_TOP - PLOT_PAD_BOTTOM,
    )
