"""The quick start's site, page by page: after importing the published
MLR-Bench sample, every public page a visitor can reach from the navigation
answers, for every stage, agent, task with results and submission (agent
names such as `o4-mini-2025-04-16` carry dots)."""

import pytest

from benchmark.models import Agent
from submissions.models import Stage, Submission

pytestmark = pytest.mark.django_db


def test_every_public_page_of_the_imported_sample_answers(client, sample):
    agents = list(Agent.objects.values_list("name", flat=True))
    assert any("." in name for name in agents)
    submissions = list(Submission.objects.values_list("pk", flat=True))
    tasks = set(Submission.objects.values_list("task__slug", flat=True))

    urls = ["/", "/leaderboard/", "/tasks/", "/submissions/", "/agreement/", "/api/leaderboard/"]
    urls += [f"/leaderboard/?stage={stage}" for stage in Stage.values if stage != Stage.METHOD]
    urls += [f"/agreement/?stage={stage}" for stage in Stage.values if stage != Stage.METHOD]
    urls += [f"/agents/{name}/" for name in agents]
    urls += [f"/agents/{name}/submissions/" for name in agents]
    urls += [f"/tasks/{slug}/results/" for slug in tasks]
    urls += [f"/tasks/{slug}/" for slug in tasks]
    urls += [f"/submissions/{pk}/" for pk in submissions]
    urls += [f"/submissions/{pk}/scores/" for pk in submissions]
    urls += [f"/submissions/{pk}/judgments/" for pk in submissions]
    # What `mlrbench status` and the page's live progress read (hallucination reviews too).
    urls += [f"/api/submissions/{pk}/judgments/" for pk in submissions]
    failures = {}
    for url in urls:
        status = client.get(url).status_code
        if status != 200:
            failures[url] = status
    assert failures == {}
