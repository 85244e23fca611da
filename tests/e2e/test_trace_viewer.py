"""The trace viewer in the browser: from the submission page to the steps of
the agent's Claude Code trace, a tool call unfolded, its output as text."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.benchmark.runs import sample_submission

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(os.environ.get("SCREENSHOT_DIR", "/tmp/mlrbench-screenshots"))


def test_a_reader_follows_the_trace_link_and_unfolds_a_tool_call(page, mlrbench_data, tmp_path):
    submission = sample_submission(mlrbench_data, tmp_path)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"/submissions/{submission.pk}/")

    page.get_by_test_id("trace-links").get_by_role("link", name="claude_output.json").click()

    expect(page.get_by_test_id("trace-format")).to_have_text("Claude Code")
    steps = page.get_by_test_id("trace-step")
    expect(steps).to_have_count(28)
    call = steps.nth(1).get_by_test_id("tool-call").first
    result = call.get_by_test_id("tool-result")
    expect(result).to_be_hidden()  # folded
    call.locator("summary").click()
    expect(call.get_by_test_id("tool-arguments")).to_contain_text("description: Read project files")
    expect(result).to_contain_text("Read(file_path:")
    expect(result).to_be_visible()
    expect(steps.nth(1).get_by_test_id("step-usage")).to_contain_text("22,146 in / 362 out tokens")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "trace-viewer.png"))
