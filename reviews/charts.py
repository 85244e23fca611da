"""The agreement dashboard's charts: per dimension, the two gap distributions
side by side, and each paper's human mean against its LLM score. Geometry only
(`common.charts.FramedPlot`); `reviews/_framed_plot.html` draws it as SVG, so
the page works without JavaScript and every text is escaped by the template."""

from collections.abc import Sequence
from dataclasses import dataclass

from common.charts import FramedPlot, PlotBar, PlotDot, framed_plot, plot_area

from .agreement import GapHistogram
from .selectors import StageAgreement

HH_COLOUR, HL_COLOUR = "#2952a3", "#d9822b"


def gap_histogram_plot(dimension: str, histogram: GapHistogram) -> FramedPlot | None:
    """None when neither group has a gap to show."""
    edges, hh, hl = histogram.edges, histogram.human_human, histogram.human_llm
    if not any(hh) and not any(hl):
        return None
    left, top, plot_w, plot_h = plot_area()
    n_bins = len(edges) - 1
    highest = max([*hh, *hl, 0.01])
    slot = plot_w / max(n_bins, 1)
    bars = []
    for i in range(n_bins):
        x0 = left + i * slot
        for offset, share, colour, group in (
            (0.1, hh[i], HH_COLOUR, "human-human"),
            (0.5, hl[i], HL_COLOUR, "human-LLM"),
        ):
            height = plot_h * share / highest
            bars.append(
                PlotBar(
                    x=round(x0 + offset * slot, 1),
                    y=round(top + plot_h - height, 1),
                    width=round(slot * 0.4, 1),
                    height=round(height, 1),
                    fill=colour,
                    title=f"{group} gap {edges[i]:g}–{edges[i + 1]:g}: {share:.0%}",
                )
            )
    return framed_plot(
        title=f"{dimension}: share of gaps by size (blue human-human, orange human-LLM)",
        test_id=f"gaps-{dimension}",
        x_label="absolute score gap",
        y_label="share",
        x_ticks=[(left + i * slot + slot / 2, f"{edges[i]:g}") for i in range(n_bins)],
        y_ticks=[
            (top + plot_h - plot_h * share / highest, f"{share:.0%}")
            for share in (0, highest / 2, highest)
        ],
        bars=bars,
    )


def scatter_plot(
    dimension: str, points: Sequence[tuple[float, float, int]], low: float = 1, high: float = 10
) -> FramedPlot | None:
    """One dot per (human mean, LLM score, papers); None without points."""
    if not points:
        return None
    left, top, plot_w, plot_h = plot_area()
    low = min(low, *(p[0] for p in points), *(p[1] for p in points))
    high = max(high, *(p[0] for p in points), *(p[1] for p in points))
    span = max(high - low, 1)

    def sx(value: float) -> float:
        return round(left + plot_w * (value - low) / span, 1)

    def sy(value: float) -> float:
        return round(top + plot_h - plot_h * (value - low) / span, 1)

    step = 1 if span <= 10 else 2
    return framed_plot(
        title=f"{dimension}: each paper's human mean against its LLM score",
        test_id=f"scatter-{dimension}",
        x_label="human mean",
        y_label="LLM score",
        x_ticks=[(sx(tick), str(tick)) for tick in range(int(low), int(high) + 1)],
        y_ticks=[(sy(tick), str(tick)) for tick in range(int(low), int(high) + 1, step)],
        dots=[
            PlotDot(
                x=sx(x),
                y=sy(y),
                r=round(min(2.5 + n**0.5, 9), 1),
                fill=HH_COLOUR,
                title=f"human mean {x:g}, LLM {y:g}: {n} paper(s)",
            )
            for x, y, n in points
        ],
        reference=(sx(low), sy(low), sx(high), sy(high)),
    )


@dataclass(frozen=True)
class AgreementChart:
    dimension: str
    histogram: FramedPlot | None
    scatter: FramedPlot | None


def agreement_charts(result: StageAgreement) -> list[AgreementChart]:
    charts = []
    for row in result.dimensions:
        plot = result.plots[row.dimension]
        charts.append(
            AgreementChart(
                dimension=row.dimension,
                histogram=gap_histogram_plot(row.dimension, plot.histogram),
                scatter=scatter_plot(row.dimension, plot.scatter),
            )
        )
    return charts
