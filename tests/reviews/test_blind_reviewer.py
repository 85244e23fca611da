"""A determined reviewer (issue 32, finding 4): assigned an end-to-end paper by
`bob-secret-agent`, they try every public path the probe found, signed out
and signed in, and then read the blind paper page's files for names, model
prices and fragments. Each path the probe used is asserted here."""

import json
import re

import pytest
from django.urls import reverse

from benchmark.roles import organiser_grant
from leaderboard.releases import release_create
from reviews.services import (
    assignment_add,
    review_round_close,
    review_round_create,
    reviewer_register,
)
from submissions.models import ArtifactKind, Stage

from .factories import (
    AgentFactory,
    JudgeFactory,
    RubricFactory,
    SubmissionFactory,
    TeamFactory,
    UserFactory,
    artifact_add,
    judgment_record,
)

pytestmark = pytest.mark.django_db

AGENT = "bob-secret-agent"
MODEL = "claude-3-7-sonnet-20250219"
TITLE = "Quasar Drift Alignment"
# Every word of the agent, its model and its team, and the parts the probe
# found in file names and the log (`SecretAgent`, `sonnet`, `BobSecretAgent`).
SECRETS = ("bob-secret-agent", "bobsecretagent", "secret", "sonnet", "claude", "quasar lab")


def _scores(overall: int) -> dict[str, int]:
    return {"Clarity": 7, "Novelty": 6, "Soundness": 5, "Significance": 6, "Overall": overall}


def _mlr_agent_trace() -> bytes:
    """An MLR-Agent trace of two steps, with tokens and a cost each (what the
    probe read per step: `1,000 in / 1,000 out · $0.0180`)."""
    return json.dumps(
        {
            "format": "mlr-agent-trace",
            "model": MODEL,
            "agent": "BobSecretAgent",
            "steps": [
                {
                    "stage": name,
                    "message": {"role": "assistant", "content": f"BobSecretAgent's {name}."},
                    "usage": {"prompt_tokens": 1000, "completion_tokens": 1000},
                    "cost_usd": 0.018,
                }
                for name in ("idea", "proposal")
            ],
        }
    ).encode()


@pytest.fixture
def probe(media_root):
    rubric = RubricFactory()
    team = TeamFactory(name="Quasar Lab", slug="quasar-lab")
    agent = AgentFactory(name=AGENT, display_name="Bob Secret Agent", base_model=MODEL, team=team)
    paper = SubmissionFactory(agent=agent, stage=Stage.END2END)
    rival_agent = AgentFactory(name="rival")
    rival = SubmissionFactory(agent=rival_agent, task=paper.task, stage=Stage.END2END)
    artifact_add(paper, "results/paper.md", ArtifactKind.PAPER, f"# {TITLE}\n\nWe study drift.\n")
    artifact_add(rival, "results/paper.md", ArtifactKind.PAPER, b"# Rival paper\n")
    artifact_add(paper, "results/SecretAgent_notes.txt", ArtifactKind.OTHER, b"notes\n")
    artifact_add(paper, "results/sonnet_eval.txt", ArtifactKind.OTHER, b"eval\n")
    artifact_add(
        paper,
        "idea_token_usage.json",
        ArtifactKind.TOKEN_USAGE,
        json.dumps({"model": MODEL, "prompt_tokens": 1000, "completion_tokens": 1000}).encode(),
    )
    artifact_add(
        paper,
        "results/log.txt",
        ArtifactKind.LOG,
        b"epoch 1 loss 0.5\nBobSecretAgent done with claude-3-7-sonnet\n",
    )
    artifact_add(paper, "mlr-agent_output.json", ArtifactKind.TRACE, _mlr_agent_trace())
    judges = [JudgeFactory(name="judge-a"), JudgeFactory(name="judge-b")]
    for submission in (paper, rival):
        for judge in judges:
            judgment_record(submission, judge, rubric, _scores(7))
    organiser = UserFactory(username="organiser")
    organiser_grant(user=organiser)
    reviewer = UserFactory(username="reviewer")
    reviewer_register(user=reviewer)
    review_round = review_round_create(
        name="Open round",
        stage=Stage.END2END,
        due_at=paper.created_at.replace(year=paper.created_at.year + 1),
        submissions=[paper],
        reviewers_per_paper=1,
        created_by=organiser,
    )
    assignment = assignment_add(review_round=review_round, reviewer=reviewer, submission=paper)
    # A release made while the round is open (the probe's `/releases/r1/`).
    release_create(name="r1")
    return paper, rival, reviewer, organiser, assignment, review_round


def _public_paths(paper) -> dict[str, str]:
    slug = paper.task.slug
    return {
        "submission list API": f"/api/submissions/?task={slug}",
        "submission list": f"/submissions/?task={slug}",
        "end-to-end board": "/leaderboard/?stage=end2end",
        "end-to-end board API": "/api/leaderboard/?stage=end2end",
        "compare": f"/leaderboard/compare/?stage=end2end&a={AGENT}&b=rival",
        "compare API": f"/api/leaderboard/compare/?stage=end2end&a={AGENT}&b=rival",
        "fabrication page": "/fabrication/?stage=end2end",
        "release page": "/releases/r1/",
        "releases": "/releases/",
        "judges' board API": "/api/judges/leaderboard/?stage=end2end",
        "agent page": f"/agents/{AGENT}/",
    }


def _body(response) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def _leaks(response, paper) -> list[str]:
    """What of the paper a response tells: its title, its page, its task with its
    agent, or its agent's board numbers."""
    body = _body(response)
    found = []
    if TITLE in body:
        found.append("title")
    if f"/submissions/{paper.pk}/" in body or f'"submission": {paper.pk}' in body:
        found.append("link")
    if paper.task.slug in body and AGENT in body:
        found.append("task with agent")
    if re.search(rf"{AGENT}.{{0,400}}n_tasks\W+1", body, re.DOTALL):
        found.append("board row")
    return found


def test_no_public_path_tells_the_reviewer_the_agent_signed_out_or_in(
    client, probe, django_capture_on_commit_callbacks
):
    paper, _rival, reviewer, organiser, _assignment, review_round = probe

    for who in ("signed out", "signed in"):
        if who == "signed in":
            client.force_login(reviewer)
        assert client.get(f"/submissions/{paper.pk}/").status_code == 404, who
        for name, url in _public_paths(paper).items():
            response = client.get(url)
            assert response.status_code in (200, 400, 403, 404), (who, name, response.status_code)
            assert _leaks(response, paper) == [], (who, name)

    # The organisers see it all, and so does everyone once the round is closed
    # (the release made while it was open keeps it out for good).
    client.force_login(organiser)
    assert TITLE in _body(client.get(f"/submissions/{paper.pk}/"))
    # The boards are refreshed once the close commits.
    with django_capture_on_commit_callbacks(execute=True):
        review_round_close(review_round=review_round)
    client.logout()
    board = client.get("/api/leaderboard/?stage=end2end").json()
    assert AGENT in json.dumps(board)
    assert _leaks(client.get("/releases/r1/"), paper) == []


def test_the_blind_paper_page_names_no_agent_model_or_price(client, probe):
    paper, _rival, reviewer, _organiser, assignment, _round = probe
    client.force_login(reviewer)
    paper_url = reverse("reviews:paper", args=[assignment.code])
    html = _body(client.get(paper_url))
    bodies = [html]
    dispositions = []
    for link in sorted(set(re.findall(r'href="\./([^"#]*)"', html))):
        response = client.get(paper_url + link)
        assert response.status_code == 200, link
        bodies.append(link)
        bodies.append(_body(response))
        dispositions.append(response.get("Content-Disposition", ""))
    bodies.extend(dispositions)
    bodies.append(json.dumps(client.get(f"/api/reviews/assignments/{assignment.code}/").json()))

    text = "\n".join(bodies).lower()
    for word in SECRETS:
        assert word not in text, word
    # No per-step tokens or costs (a step's price names its model).
    assert " in / " not in text and "$0.0" not in text
    # The renamed files, the trace's steps and the token usage were all read.
    for shown in ("notes.txt", "eval.txt", "idea_token_usage.json", "steps=1"):
        assert any(shown in link for link in bodies), (shown, bodies[1::2])
    assert all(d == "" or "secret" not in d.lower() for d in dispositions)
