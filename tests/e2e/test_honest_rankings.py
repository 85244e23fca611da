"""The sample data in Chromium: shared ranks where the data cannot tell
agents apart, the cost-against-Overall chart with its Pareto frontier, the
judges' board with both imported judges, and a release that stays byte for
byte the same across a new import."""

from io import StringIO

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_sample_data_ranks_honestly_charts_cost_and_lists_the_judges(page, sample):
    page.goto("/leaderboard/?stage=idea")
    ranks = page.locator('tr[data-agent] td[data-column="rank"]').evaluate_all(
        "cells => cells.map(c => c.firstChild.textContent.trim())"
    )
    # Six agents on three tasks each: the data separates none of them.
    assert len(ranks) == 6 and set(ranks) == {"1"}
    assert page.get_by_test_id("rank-strict").count() >= 1

    page.goto("/leaderboard/?stage=end2end")
    chart = page.get_by_test_id("cost-chart")
    chart.wait_for(state="visible")
    box = chart.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 200
    # The price table prices the retired models: every end-to-end agent is placed
    # (the sample's five published agents and AI Scientist v2).
    assert page.locator(".cost-chart g.point").count() == 6
    assert page.get_by_test_id("without-cost").count() == 0
    assert page.locator(".cost-chart g.pareto").count() >= 1
    assert page.get_by_test_id("pareto-frontier").count() == 1

    page.goto("/judges/?stage=end2end")
    judges = page.locator('tr[data-kind="judge"]').evaluate_all(
        "rows => rows.map(r => r.dataset.judge)"
    )
    assert judges == ["claude-3-7-sonnet-20250219", "gemini-2.5-pro-preview"]
    agreement = page.locator('tr[data-kind="judge"] td[data-column="mean_abs_diff"]')
    assert all("n=" in text for text in agreement.all_inner_texts())
    assert page.locator('tr[data-kind="baseline"]').count() == 1
    assert page.locator('tr[data-kind="human"]').count() == 1

    call_command("release", "create", "sample-1", stdout=StringIO())
    before = page.request.get("/api/releases/sample-1/").body()
    call_command("import_mlrbench", str(sample.path), stdout=StringIO())
    assert page.request.get("/api/releases/sample-1/").body() == before
    page.goto("/releases/sample-1/")
    assert "@misc{mlrbench_sample_1" in page.get_by_test_id("release-bibtex").inner_text()
