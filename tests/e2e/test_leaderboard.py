import csv
import io

import pytest

from submissions.models import Stage
from tests.benchmark.factories import AgentFactory, TaskFactory
from tests.judging.factories import JudgeFactory
from tests.leaderboard.factories import judge_submission
from tests.submissions.factories import SubmissionFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def rows_on_page(page) -> list[str]:
    return page.locator("tr[data-agent]").evaluate_all("rows => rows.map(row => row.dataset.agent)")


def test_a_visitor_changes_stage_and_filter_sorts_and_downloads_the_csv(page):
    judges = [JudgeFactory(name="claude-judge"), JudgeFactory(name="gemini-judge")]
    iclr = TaskFactory(slug="iclr2025_a", conference="iclr", year=2025)
    icml = TaskFactory(slug="icml2024_b", conference="icml", year=2024)
    # (agent, stage, task, Overall, Clarity)
    results = [
        ("alpha", Stage.END2END, iclr, 8, 4),
        ("beta", Stage.END2END, iclr, 6, 7),
        ("alpha", Stage.PAPER, iclr, 9, 3),
        ("alpha", Stage.PAPER, icml, 3, 2),
        ("beta", Stage.PAPER, icml, 5, 8),
        ("gamma", Stage.PAPER, icml, 7, 6),
    ]
    for name, stage, task, overall, clarity in results:
        submission = SubmissionFactory(agent=AgentFactory(name=name), stage=stage, task=task)
        for judge in judges:
            judge_submission(
                submission,
                judge,
                {"Overall": overall, "Clarity": clarity, "Soundness": 5, "Completeness": 5},
            )

    page.goto("/leaderboard/")
    assert rows_on_page(page) == ["alpha", "beta"]

    page.get_by_role("tablist", name="Stage").get_by_role("tab", name="Paper").click()
    page.wait_for_url("**stage=paper**")
    # alpha (9+3)/2=6, gamma 7, beta 5.
    assert rows_on_page(page) == ["gamma", "alpha", "beta"]

    page.get_by_label("Conference").select_option("icml")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**conference=icml**")
    assert rows_on_page(page) == ["gamma", "beta", "alpha"]
    assert page.get_by_test_id("leaderboard-summary").inner_text().startswith("3 agents on 1 task")

    page.get_by_role("columnheader", name="Clarity").get_by_role("link").click()
    page.wait_for_url("**sort=-Clarity**")
    assert rows_on_page(page) == ["beta", "gamma", "alpha"]
    assert page.locator('tr[data-agent="beta"] td[data-column="Clarity"]').inner_text() == "8.00"

    with page.expect_download() as download_info:
        page.get_by_test_id("download-csv").click()
    download = download_info.value
    assert download.suggested_filename == "leaderboard-paper.csv"
    with open(download.path(), encoding="utf-8") as handle:
        downloaded = list(csv.DictReader(io.StringIO(handle.read())))
    assert [row["agent"] for row in downloaded] == ["beta", "gamma", "alpha"]
    assert [float(row["Clarity"]) for row in downloaded] == [8.0, 6.0, 2.0]
    assert {row["n_tasks"] for row in downloaded} == {"1"}
