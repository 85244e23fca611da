"""Server-rendered SVG for the agreement dashboard: per dimension, the two gap
distributions side by side, and each paper's human mean against its LLM
score. No chart library, no script: the page works without JavaScript."""

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from .agreement import GapHistogram
from .selectors import StageAgreement

WIDTH, HEIGHT = 320, 200
PAD_LEFT, PAD_BOTTOM, PAD_TOP, PAD_RIGHT = 48, 30, 10, 10
HH_COLOUR, HL_COLOUR = "#2952a3", "#d9822b"


def _frame(title: str, x_label: str, y_label: str, body: list[str], test_id: str) -> SafeString:
    plot_w, plot_h = WIDTH - PAD_LEFT - PAD_RIGHT, HEIGHT - PAD_TOP - PAD_BOTTOM
    parts = [
        f'<svg class="chart" data-testid="{escape(test_id)}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<rect x="{PAD_LEFT}" y="{PAD_TOP}" width="{plot_w}" height="{plot_h}" '
        'fill="none" stroke="#dde1e8"/>',
        *body,
        f'<text x="{PAD_LEFT + plot_w / 2}" y="{HEIGHT - 4}" text-anchor="middle" '
        f'font-size="11">{escape(x_label)}</text>',
        f'<text x="12" y="{PAD_TOP + plot_h / 2}" text-anchor="middle" font-size="11" '
        f'transform="rotate(-90 12 {PAD_TOP + plot_h / 2})">{escape(y_label)}</text>',
        "</svg>",
    ]
    return mark_safe("".join(parts))  # noqa: S308 - every text above is escaped


def _y_ticks(ticks: list[tuple[float, str]]) -> list[str]:
    """The y axis's values, right-aligned left of the plot, with a faint grid line."""
    return [
        f'<line x1="{PAD_LEFT}" y1="{y:.1f}" x2="{WIDTH - PAD_RIGHT}" y2="{y:.1f}" '
        f'stroke="#eef0f4"/><text class="tick" data-axis="y" x="{PAD_LEFT - 4}" y="{y:.1f}" '
        f'text-anchor="end" dominant-baseline="middle" font-size="9">{escape(label)}</text>'
        for y, label in ticks
    ]


NOT_ENOUGH_DATA = mark_safe(  # noqa: S308 - a constant
    '<p class="muted not-enough-data" data-testid="chart-not-enough-data">'
    "Not enough data for this chart.</p>"
)


def gap_histogram_svg(dimension: str, histogram: GapHistogram) -> SafeString:
    edges, hh, hl = histogram.edges, histogram.human_human, histogram.human_llm
    if not any(hh) and not any(hl):
        return NOT_ENOUGH_DATA
    n_bins = len(edges) - 1
    plot_w, plot_h = WIDTH - PAD_LEFT - PAD_RIGHT, HEIGHT - PAD_TOP - PAD_BOTTOM
    top = max([*hh, *hl, 0.01])
    slot = plot_w / max(n_bins, 1)
    bar = slot * 0.4
    body = []
    for i in range(n_bins):
        x0 = PAD_LEFT + i * slot
        for offset, share, colour, group in (
            (0.1, hh[i], HH_COLOUR, "human-human"),
            (0.5, hl[i], HL_COLOUR, "human-LLM"),
        ):
            height = plot_h * share / top
            body.append(
                f'<rect x="{x0 + offset * slot:.1f}" y="{PAD_TOP + plot_h - height:.1f}" '
                f'width="{bar:.1f}" height="{height:.1f}" fill="{colour}">'
                f"<title>{group} gap {edges[i]:g}–{edges[i + 1]:g}: {share:.0%}</title></rect>"
            )
        body.append(
            f'<text class="tick" data-axis="x" x="{x0 + slot / 2:.1f}" '
            f'y="{PAD_TOP + plot_h + 12}" text-anchor="middle" font-size="9">{edges[i]:g}</text>'
        )
    body += _y_ticks([(PAD_TOP + plot_h - plot_h * share / top, f"{share:.0%}") for share in
                      (0, top / 2, top)])  # fmt: skip
    return _frame(
        f"{dimension}: share of gaps by size (blue human-human, orange human-LLM)",
        "absolute score gap",
        "share",
        body,
        f"gaps-{dimension}",
    )


def scatter_svg(
    dimension: str, points: Sequence[tuple[float, float, int]], low: float = 1, high: float = 10
) -> SafeString:
    if not points:
        return NOT_ENOUGH_DATA
    plot_w, plot_h = WIDTH - PAD_LEFT - PAD_RIGHT, HEIGHT - PAD_TOP - PAD_BOTTOM
    if points:
        low = min(low, *(p[0] for p in points), *(p[1] for p in points))
        high = max(high, *(p[0] for p in points), *(p[1] for p in points))
    span = max(high - low, 1)

    def sx(value: float) -> float:
        return PAD_LEFT + plot_w * (value - low) / span

    def sy(value: float) -> float:
        return PAD_TOP + plot_h - plot_h * (value - low) / span

    body = [
        f'<line x1="{sx(low):.1f}" y1="{sy(low):.1f}" x2="{sx(high):.1f}" y2="{sy(high):.1f}" '
        'stroke="#999" stroke-dasharray="4 3"/>'
    ]
    for tick in range(int(low), int(high) + 1):
        body.append(
            f'<text class="tick" data-axis="x" x="{sx(tick):.1f}" y="{PAD_TOP + plot_h + 12}" '
            f'text-anchor="middle" font-size="9">{tick}</text>'
        )
    step = 1 if span <= 10 else 2
    body += _y_ticks([(sy(tick), str(tick)) for tick in range(int(low), int(high) + 1, step)])
    for x, y, n in points:
        radius = min(2.5 + n**0.5, 9)
        body.append(
            f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="{radius:.1f}" fill="{HH_COLOUR}" '
            f'fill-opacity="0.55"><title>human mean {x:g}, LLM {y:g}: {n} paper(s)</title>'
            "</circle>"
        )
    return _frame(
        f"{dimension}: each paper's human mean against its LLM score",
        "human mean",
        "LLM score",
        body,
        f"scatter-{dimension}",
    )


@dataclass(frozen=True)
class AgreementChart:
    dimension: str
    histogram: SafeString
    scatter: SafeString


def agreement_charts(result: StageAgreement) -> list[AgreementChart]:
    charts = []
    for row in result.dimensions:
        plot = result.plots[row.dimension]
        charts.append(
            AgreementChart(
                dimension=row.dimension,
                histogram=gap_histogram_svg(row.dimension, plot.histogram),
                scatter=scatter_svg(row.dimension, plot.scatter),
            )
        )
    return charts
