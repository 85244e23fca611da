"""The paper's provenance marks in the browser (issue 38): on the end-to-end
Claude Code run's paper each classed number is marked, its label tells where it
came from, and following a mark lands on that step of the trace viewer."""

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.benchmark.runs import sample_submission

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("SCREENSHOT_DIR", "/tmp/mlrbench-screenshots"))


def test_a_reader_follows_a_marked_number_to_the_step_that_printed_it(
    page, mlrbench_data, tmp_path
):
    submission = sample_submission(mlrbench_data, tmp_path)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"/submissions/{submission.pk}/")

    expect(page.get_by_test_id("provenance-legend")).to_contain_text("measured")
    expect(page.get_by_test_id("summary-provenance")).to_contain_text(" measured, ")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.get_by_test_id("provenance-legend").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "paper-provenance-legend.png"))
    paper = page.get_by_test_id("paper")
    marks = paper.locator("mark.prov")
    assert marks.count() > 0
    # Every mark says its class and where the number came from, to a screen reader too.
    for index in range(marks.count()):
        link = marks.nth(index).locator("a")
        klass = marks.nth(index).get_attribute("data-class")
        assert re.match(rf"^[-+−]?[\d.]+ ?%?, {klass}: ", link.get_attribute("aria-label") or "")
    stepped = paper.locator('mark.prov a[href*="/trace/"]')
    assert stepped.count() > 0
    first = stepped.first
    # The paper is folded after its first screen: a reader unfolds it.
    page.locator('[data-testid="paper"] + [data-testid="show-all"]').click()
    first.scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "paper-provenance-marks.png"))
    label = first.get_attribute("title") or ""
    step = re.search(r"step (\d+)", label)
    assert step, label

    first.click()

    expect(page).to_have_url(re.compile(rf"/trace/claude_output\.json\?step={step.group(1)}#"))
    target = page.locator(f"#step-{step.group(1)}")
    expect(target).to_be_visible()
    expect(target).to_be_in_viewport()
    page.screenshot(path=str(SCREENSHOTS / "paper-provenance-step.png"))

    # Back on the paper, the ledger under it lists every number with its evidence.
    page.go_back()
    page.locator("#provenance > summary").click()
    ledger = page.get_by_test_id("provenance")
    expect(ledger.locator("tr[data-class]").first).to_be_visible()
    ledger.screenshot(path=str(SCREENSHOTS / "paper-provenance-ledger.png"))
