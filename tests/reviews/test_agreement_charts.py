"""The agreement dashboard's charts read as charts: both axes carry ticks, and
every text in them is escaped by the template that draws them."""

from django.template.loader import render_to_string

from reviews.agreement import GapHistogram
from reviews.charts import gap_histogram_plot, scatter_plot


def drawn(plot) -> str:
    return render_to_string("reviews/_framed_plot.html", {"plot": plot})


def test_the_gap_histogram_has_share_ticks_on_its_y_axis():
    histogram = GapHistogram(
        edges=[0, 1, 2, 3], human_human=[0.5, 0.3, 0.2], human_llm=[0.2, 0.4, 0.4]
    )
    svg = drawn(gap_histogram_plot("Overall", histogram))
    assert svg.count('data-axis="x"') == 3
    assert svg.count('data-axis="y"') == 3 and ">50%</text>" in svg and ">0%</text>" in svg


def test_the_scatter_has_score_ticks_on_both_axes():
    svg = drawn(scatter_plot("Overall", [(6.5, 7.0, 2), (3.0, 4.0, 1)]))
    assert svg.count('data-axis="x"') == 10  # 1 to 10
    assert svg.count('data-axis="y"') == 10


def test_a_chart_without_data_says_so_and_a_dimension_name_is_escaped():
    assert 'data-testid="chart-not-enough-data"' in drawn(scatter_plot("Overall", []))
    svg = drawn(scatter_plot("<b>Soundness</b>", [(6.5, 7.0, 2)]))
    assert "<b>" not in svg and "&lt;b&gt;Soundness&lt;/b&gt;" in svg
