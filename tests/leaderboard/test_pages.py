import re

import pytest
from django.urls import reverse

from benchmark.models import ModelFamily
from submissions.models import Stage
from tests.benchmark.factories import AgentFactory, TaskFactory
from tests.judging.factories import JudgeFactory
from tests.leaderboard.factories import judge_submission
from tests.submissions.factories import SubmissionFactory

pytestmark = pytest.mark.django_db

PAGE = "/leaderboard/"


def scores(overall, clarity=5):
    return {"Overall": overall, "Clarity": clarity, "Novelty": 6, "Soundness": 4}


def agents_in_order(response) -> list[str]:
    return re.findall(r'<tr data-agent="([^"]+)"', response.content.decode())


@pytest.fixture
def board():
    claude = JudgeFactory(name="claude-judge", model_family=ModelFamily.ANTHROPIC)
    gemini = JudgeFactory(name="gemini-judge", model_family=ModelFamily.GOOGLE)
    task = TaskFactory(slug="iclr2025_bi_align", title="Bidirectional alignment")
    other = TaskFactory(slug="icml2024_other", conference="icml", year=2024, title="Other")
    agents = {
        "claude": AgentFactory(
            name="claude",
            display_name="Claude agent",
            base_model="claude-3-7-sonnet",
            coding_agent="Claude Code",
            model_family=ModelFamily.ANTHROPIC,
        ),
        "o4-mini": AgentFactory(name="o4-mini", display_name="o4-mini agent"),
        "gemini": AgentFactory(name="gemini", display_name="Gemini agent"),
    }
    for name, (on_task, on_other) in {
        "claude": (6, 10),
        "o4-mini": (5, 6),
        "gemini": (7, None),
    }.items():
        s = SubmissionFactory(agent=agents[name], task=task)
        judge_submission(s, claude, scores(on_task, clarity=on_task - 2))
        judge_submission(s, gemini, scores(on_task, clarity=on_task - 2))
        if on_other is not None:
            s = SubmissionFactory(agent=agents[name], task=other)
            judge_submission(s, claude, scores(on_other))
    return agents


def test_the_leaderboard_page_ranks_agents_with_interval_charts_and_the_acceptance_line(
    client, board
):
    response = client.get(PAGE)

    assert response.status_code == 200
    html = response.content.decode()
    # claude (6+10)/2=8, gemini 7, o4-mini 5.5: the 6.0 line sits before o4-mini.
    assert agents_in_order(response) == ["claude", "gemini", "o4-mini"]
    line = html.index('data-testid="acceptance-line"')
    assert html.index('data-agent="gemini"') < line < html.index('data-agent="o4-mini"')
    assert 'class="tab current" tabindex="0">End to end</a>' in html
    assert "Claude Code" in html
    assert 'data-testid="same-family"' in html
    assert 'data-testid="overall-chart"' in html
    assert 'data-testid="dimension-heatmap"' in html
    assert "<circle" in html and 'class="whisker"' in html
    assert 'href="/api/leaderboard/?stage=end2end&amp;format=csv"' in html
    assert 'href="/api/leaderboard/?stage=end2end&amp;format=json"' in html
    # The site holds a sample: it says how much of the benchmark.
    assert re.search(r"3 agents on <span[^>]*>2 of 10 end-to-end tasks</span>", html)
    assert "cdn" not in html.lower()


def test_the_page_filters_sorts_and_keeps_the_choices_in_its_links(client, board):
    icml = client.get(PAGE, {"conference": "icml"})
    assert agents_in_order(icml) == ["claude", "o4-mini"]
    assert (
        'href="/api/leaderboard/?stage=end2end&amp;conference=icml&amp;format=csv"'
        in icml.content.decode()
    )

    common = client.get(PAGE, {"common_tasks": "on"})
    assert agents_in_order(common) == ["gemini", "claude", "o4-mini"]

    by_clarity = client.get(PAGE, {"sort": "Clarity"})
    assert agents_in_order(by_clarity) == ["o4-mini", "claude", "gemini"]
    assert 'aria-sort="ascending"' in by_clarity.content.decode()
    # The line marks Overall order only.
    assert 'data-testid="acceptance-line"' not in by_clarity.content.decode()

    other_stage = client.get(PAGE, {"stage": "paper", "conference": "icml"})
    assert 'data-testid="leaderboard-empty"' in other_stage.content.decode()


def test_a_bad_choice_on_the_page_is_explained(client, board):
    response = client.get(PAGE, {"year": "soon", "sort": "Overall"})
    assert response.status_code == 400
    assert "Enter a whole number." in response.content.decode()

    response = client.get(PAGE, {"sort": "Elegance"})
    assert response.status_code == 400
    assert "cannot sort by" in response.content.decode()


def test_the_agent_page_shows_its_profile_stages_tasks_and_chart(client, board):
    response = client.get(reverse("leaderboard:agent-detail", args=["claude"]))

    assert response.status_code == 200
    html = response.content.decode()
    assert "claude-3-7-sonnet" in html
    assert re.search(r'data-stage="end2end">.*?1 of 3', html, re.S)
    assert 'data-testid="agent-dimension-chart"' in html
    assert "/tasks/iclr2025_bi_align/results/" in html
    assert len(re.findall(r'href="/submissions/\d+/', html)) == 2
    assert 'href="/agents/claude/submissions/"' in html
    assert client.get("/agents/nobody/").status_code == 404


def test_the_task_results_page_lists_every_version_and_marks_the_one_that_counts(client, board):
    agent = board["o4-mini"]
    task = TaskFactory(slug="iclr2025_bi_align")
    newer = SubmissionFactory(agent=agent, task=task, version=2)
    judge_submission(newer, JudgeFactory(name="claude-judge"), scores(9))
    judge_submission(newer, JudgeFactory(name="gemini-judge"), scores(9), status="running")

    response = client.get("/tasks/iclr2025_bi_align/results/")

    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("on the leaderboard") == 3
    assert f'<tr data-submission="{newer.pk}" class="muted">' in html
    assert "Judging" in html
    task_page = client.get("/tasks/iclr2025_bi_align/").content.decode()
    assert 'href="/tasks/iclr2025_bi_align/results/"' in task_page
    assert client.get("/tasks/iclr2099_none/results/").status_code == 404


def test_the_submission_page_shows_each_judge_and_the_mean(client, board):
    submission = board["claude"].submissions.get(task__slug="iclr2025_bi_align")

    response = client.get(reverse("leaderboard:submission-scores", args=[submission.pk]))

    assert response.status_code == 200
    html = response.content.decode()
    assert "claude-judge" in html and "gemini-judge" in html
    assert "Mean (stage score)" in html
    assert "Because." in html
    assert Stage.END2END.label in html
