"""The agreement dashboard's charts read as charts: both axes carry ticks."""

from reviews.agreement import GapHistogram
from reviews.charts import gap_histogram_svg, scatter_svg


def test_the_gap_histogram_has_share_ticks_on_its_y_axis():
    histogram = GapHistogram(
        edges=[0, 1, 2, 3], human_human=[0.5, 0.3, 0.2], human_llm=[0.2, 0.4, 0.4]
    )
    svg = str(gap_histogram_svg("Overall", histogram))
    assert svg.count('data-axis="x"') == 3
    assert svg.count('data-axis="y"') == 3 and ">50%</text>" in svg and ">0%</text>" in svg


def test_the_scatter_has_score_ticks_on_both_axes():
    svg = str(scatter_svg("Overall", [(6.5, 7.0, 2), (3.0, 4.0, 1)]))
    assert svg.count('data-axis="x"') == 10  # 1 to 10
    assert svg.count('data-axis="y"') == 10
