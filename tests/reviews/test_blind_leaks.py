"""Nothing tells a reviewer who wrote a paper they review blind (issue 20,
finding 4): (a) experiment pages and API, (b) per-task views that would let
them name the agent by elimination, (c) the folder, trace and home paths
every agent's runs carry."""

import re

import pytest
from django.urls import reverse

from experiments.models import ExperimentPhase, ExperimentRun, ExperimentStatus
from reviews.services import review_round_close
from submissions.models import ArtifactKind, Stage
from tests.benchmark.factories import AgentFactory
from tests.submissions.factories import SubmissionFactory, artifact_add

from .scenario import scenario_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def scenario():
    return scenario_build()


def _run(submission) -> ExperimentRun:
    return ExperimentRun.objects.create(
        submission=submission,
        phase=ExperimentPhase.DEV,
        command="sh run.sh",
        status=ExperimentStatus.QUEUED,
        time_limit_seconds=120,
    )


def test_experiment_pages_and_api_follow_the_blind_rule(client, scenario):
    s = scenario
    run = _run(s.submission)
    client.force_login(s.reviewer_a)

    assert client.get(f"/experiments/?submission={s.submission.pk}").status_code == 404
    assert client.get(f"/experiments/{run.pk}/").status_code == 404
    assert client.get(f"/experiments/{run.pk}/log").status_code == 404
    assert client.get(f"/api/experiments/?submission={s.submission.pk}").json()["count"] == 0
    client.force_login(s.reviewer_b)  # has submitted: sees it
    assert client.get(f"/experiments/{run.pk}/").status_code == 200


def test_a_task_reviewed_blind_is_left_out_of_every_per_task_view(client, scenario):
    s = scenario
    other = SubmissionFactory(agent=AgentFactory(name="rival"), task=s.submission.task)
    artifact_add(other, "results/paper.md", ArtifactKind.PAPER, b"# Rival\n")
    slug = s.submission.task.slug
    client.force_login(s.reviewer_a)

    submissions = client.get(f"/api/submissions/?task={slug}").json()
    assert submissions["count"] == 0
    assert client.get(f"/api/leaderboard/?task={slug}&stage=end2end").status_code == 404
    assert client.get(f"/leaderboard/?task={slug}&stage=end2end").status_code == 404
    results = client.get(reverse("leaderboard:task-results", args=[slug])).content.decode()
    assert "rival" not in results and f"/submissions/{other.pk}/" not in results
    judgments = client.get(f"/api/judgments/?task={slug}").json()
    assert judgments["count"] == 0
    assert client.get(f"/submissions/{other.pk}/").status_code == 404
    agent_page = client.get("/agents/rival/").content.decode()
    assert slug not in agent_page
    # Everyone else sees both once the round is closed (until then every run of
    # the task is left out for all but organisers: issues 32 and 40).
    client.force_login(s.reviewer_b)
    assert client.get(f"/api/submissions/?task={slug}").json()["count"] == 0
    client.force_login(s.organiser)
    assert client.get(f"/api/submissions/?task={slug}").json()["count"] == 2
    client.force_login(s.reviewer_b)
    review_round_close(review_round=s.review_round)
    assert client.get(f"/api/submissions/?task={slug}").json()["count"] == 2


def test_agent_named_folders_traces_and_home_paths_are_neutral_for_every_blind_paper(
    client, scenario
):
    s = scenario
    for path, kind in (
        ("claude_code/train.py", ArtifactKind.CODE),
        ("codex/eval.py", ArtifactKind.CODE),
        ("gemini/plot.py", ArtifactKind.CODE),
        ("claude_output.json", ArtifactKind.TRACE),
    ):
        artifact_add(s.submission, path, kind, b"{}\n")
    artifact_add(
        s.submission,
        "gemini_log.log",
        ArtifactKind.LOG,
        b"python /home/alice/runs/pipeline_claude/claude_code/train.py\ndone\n",
    )
    code = s.assignment_a.code
    client.force_login(s.reviewer_a)
    paper_url = reverse("reviews:paper", args=[code])
    html = client.get(paper_url).content.decode()
    bodies = [html]
    for link in re.findall(r'href="\./([^"#]*)"', html):
        response = client.get(paper_url + link)
        assert response.status_code == 200, link
        body = b"".join(response.streaming_content) if response.streaming else response.content
        bodies.append(body.decode())
    detail = client.get(f"/api/reviews/assignments/{code}/").json()
    bodies.append(str(detail))

    text = "\n".join(bodies).lower()
    for word in ("claude", "codex", "gemini", "/home/alice", "pipeline_claude"):
        assert word not in text, word
    assert "agent_code/train.py" in text and "agent_output.json" in text
    assert s.submission.stage == Stage.END2END
