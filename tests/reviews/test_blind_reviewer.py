"""A determined reviewer (issue 32, finding 4; issue 40, "blind review leaks"):
assigned an end-to-end paper by `bob-secret-agent`, they try every public path
the probe found, signed out and signed in, read the blind paper page's files
for names, model prices and fragments, hash those files and look the hashes
up in the public API, and submit a placeholder review to see the reveal and
then rewrite its scores. Each path the probes used is asserted here."""

import hashlib
import json
import re

import pytest
from django.urls import reverse

from benchmark.roles import organiser_grant
from leaderboard.releases import release_create
from reviews.models import HumanReview
from reviews.services import (
    assignment_add,
    review_round_close,
    review_round_create,
    reviewer_register,
)
from submissions.models import ArtifactKind, Stage
from tests.benchmark.factories import AgentFactory, TaskFactory, TeamFactory, UserFactory
from tests.judging.factories import JudgeFactory, RubricFactory
from tests.reviews.factories import judgment_record
from tests.submissions.factories import SubmissionFactory, artifact_add

pytestmark = pytest.mark.django_db

AGENT = "bob-secret-agent"
MODEL = "claude-3-7-sonnet-20250219"
TITLE = "Quasar Drift Alignment"
# Every word of the agent, its model and its team, and the parts the probe
# found in file names and the log (`SecretAgent`, `sonnet`, `BobSecretAgent`).
SECRETS = ("bob-secret-agent", "bobsecretagent", "secret", "sonnet", "claude", "quasar lab")


# Files of the paper the agent's other run of the task holds byte for byte.
SHARED_FILES = (
    ("bob-secret-agent_code/run.py", ArtifactKind.CODE, b"import torch\nprint('train')\n"),
    ("results/figure.png", ArtifactKind.FIGURE, bytes.fromhex("89504e470d0a1a0a") + b"fig" * 40),
    ("idea.md", ArtifactKind.IDEA, b"# An idea about drift\n\nWe adapt the reward.\n"),
)


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
    # The same agent's experiment-stage run of the same task, public, holding
    # the very files of the paper (what the issue 40 probe matched by sha256),
    # and runs of the task by another agent: none is under review itself.
    other_run = SubmissionFactory(agent=agent, task=paper.task, stage=Stage.EXPERIMENT)
    rival_idea = SubmissionFactory(agent=rival_agent, task=paper.task, stage=Stage.IDEA)
    for submission in (paper, other_run):
        for path, kind, content in SHARED_FILES:
            artifact_add(submission, path, kind, content)
    artifact_add(rival_idea, "idea.md", ArtifactKind.IDEA, b"# The rival's idea\n")
    # Another task's run by the same agent: not under review, stays public.
    elsewhere = SubmissionFactory(agent=agent, task=TaskFactory(), stage=Stage.END2END)
    artifact_add(elsewhere, "results/paper.md", ArtifactKind.PAPER, b"# Elsewhere\n")
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


def _listed_ids(client) -> set[int]:
    """Every submission id the public list API answers with, all pages."""
    ids: set[int] = set()
    url: str | None = "/api/submissions/"
    while url:
        page = client.get(url).json()
        ids |= {item["id"] for item in page["results"]}
        url = page["next"]
    return ids


def test_signed_out_the_reviewer_sees_no_run_hidden_from_them_signed_in(client, probe):
    """Issue 40: signed out, the public list showed the task's other runs the
    signed-in reviewer does not see (65 vs 50), the agent's other run of the
    task among them."""
    paper, _rival, reviewer, organiser, _assignment, _round = probe
    client.force_login(reviewer)
    signed_in = _listed_ids(client)
    signed_in_page = _body(client.get(f"/submissions/?task={paper.task.slug}"))
    client.logout()
    signed_out = _listed_ids(client)

    assert signed_out <= signed_in, sorted(signed_out - signed_in)
    assert _body(client.get(f"/submissions/?task={paper.task.slug}")).count(
        "/submissions/"
    ) <= signed_in_page.count("/submissions/")
    # Nothing of the task reaches anyone but organisers while the round is open;
    # the agent's runs of other tasks stay public.
    task_runs = set(paper.task.submissions.values_list("id", flat=True))
    assert len(task_runs) == 4 and not task_runs & signed_out
    assert AGENT in json.dumps(client.get("/api/submissions/?agent=" + AGENT).json())
    client.force_login(organiser)
    assert task_runs <= _listed_ids(client)


def _blind_files(client, reviewer, assignment) -> dict[str, bytes]:
    """Every file of the blind paper, by its blind path, as the blind page
    serves it (the assignment API lists them all, with their URLs)."""
    client.force_login(reviewer)
    detail = client.get(f"/api/reviews/assignments/{assignment.code}/").json()
    files = {}
    for artifact in detail["artifacts"]:
        response = client.get(artifact["url"])
        assert response.status_code == 200, artifact["path"]
        body = b"".join(response.streaming_content) if response.streaming else response.content
        files[artifact["path"]] = body
    return files


def test_the_blind_files_hashes_name_no_public_run(client, probe):
    """Issue 40: the sha256 of the files in `/api/submissions/<id>/` equalled
    the bytes the blind page serves, naming the agent's other run of the task.
    The reviewer hashes every blind file and looks each hash up in every public
    submission's artifacts, signed out and signed in; the other run's raw files
    are not served either."""
    paper, _rival, reviewer, _organiser, assignment, _round = probe
    other_run = paper.task.submissions.get(stage=Stage.EXPERIMENT)
    files = _blind_files(client, reviewer, assignment)
    assert {"agent_code/run.py", "results/figure.png", "idea.md"} <= set(files)
    blind_hashes = {hashlib.sha256(body).hexdigest() for body in files.values()}

    for who in ("signed out", "signed in"):
        if who == "signed out":
            client.logout()
        public_hashes = {}
        for submission_id in _listed_ids(client):
            detail = client.get(f"/api/submissions/{submission_id}/").json()
            for artifact in detail["artifacts"]:
                public_hashes[artifact["sha256"]] = (submission_id, artifact["path"])
        matches = [public_hashes[h] for h in blind_hashes if h in public_hashes]
        assert matches == [], who
        pages = [
            f"/api/submissions/{other_run.pk}/",
            f"/api/submissions/{other_run.pk}/judgments/",
            f"/submissions/{other_run.pk}/",
            f"/submissions/{other_run.pk}/judgments/",
            f"/submissions/{other_run.pk}/files/idea.md",
            *(
                f"/submissions/{other_run.pk}/raw/{path}"
                for path in ("bob-secret-agent_code/run.py", "results/figure.png", "idea.md")
            ),
        ]
        for url in pages:
            assert client.get(url).status_code == 404, (who, url)


def test_the_raw_trace_on_the_blind_page_has_no_usage_or_cost(client, probe):
    """Issue 40: the raw trace file on the blind page kept each step's `usage`
    and `cost_usd` (tokens and a price name the model); it is the trace as
    the blind filter leaves it."""
    _paper, _rival, reviewer, _organiser, assignment, _round = probe
    files = _blind_files(client, reviewer, assignment)
    raw = files["agent_output.json"].decode()
    for word in ("usage", "cost", "tokens", "1000", "0.018", *SECRETS):
        assert word not in raw.lower(), word
    trace = json.loads(raw)
    # The steps are all there, as the trace viewer shows them.
    assert [step["text"].split("'s ")[-1] for step in trace["steps"]] == ["idea.", "proposal."]


REVIEW = {"confidence": 1, "strengths": "x", "weaknesses": "x"}


def _review_url(assignment) -> str:
    return f"/api/reviews/assignments/{assignment.code}/review/"


def test_a_placeholder_review_freezes_its_scores_once_the_reveal_is_shown(client, probe):
    """Issue 40: a placeholder review revealed the agent, its team, model and
    the LLM scores, and a PUT then replaced every score. A draft reveals
    nothing; once the reveal is shown the scores and hallucination answers are
    frozen (409 in the one error shape, nothing written); texts may still change."""
    paper, _rival, reviewer, _organiser, assignment, _round = probe
    client.force_login(reviewer)
    placeholder = {d: 1 for d in _scores(1)}
    draft_url = f"/api/reviews/assignments/{assignment.code}/draft/"
    body = {**REVIEW, "scores": placeholder}
    assert client.put(draft_url, body, content_type="application/json").status_code == 200
    assert client.get(f"/api/reviews/assignments/{assignment.code}/").json()["revealed"] is None

    checks = {
        kind: {"answer": "no"}
        for kind in (
            "faked_experimental_results",
            "hallucinated_methodology",
            "nonexistent_citations",
            "mathematical_errors",
        )
    }
    first = client.post(
        _review_url(assignment), {**body, "hallucination": checks}, "application/json"
    )
    assert first.status_code == 201
    assert first.json()["revealed"]["agent"] == AGENT
    assert first.json()["revealed"]["llm_scores"]["Overall"] == 7.0

    informed = {**body, "scores": _scores(7), "hallucination": checks}
    again = client.put(_review_url(assignment), informed, content_type="application/json")
    assert again.status_code == 409
    (error,) = again.json()["errors"]
    assert error["code"] == "scores_frozen" and error["field"] == "scores"
    flipped = {**checks, "mathematical_errors": {"answer": "yes"}}
    answer = client.put(
        _review_url(assignment), {**body, "hallucination": flipped}, "application/json"
    )
    assert answer.status_code == 409
    review = HumanReview.objects.get(submission=paper, reviewer=reviewer)
    assert dict(review.scores.values_list("dimension", "score")) == placeholder
    assert review.revisions.count() == 1

    # A draft of other scores is not kept either (the form could never submit it)...
    client.put(draft_url, {"scores": _scores(9)}, content_type="application/json")
    review.refresh_from_db()
    assert review.draft == {}
    # ...while the texts still change, the frozen scores left out or repeated.
    edited = client.put(
        _review_url(assignment),
        {"confidence": 1, "strengths": "x", "weaknesses": "On reflection, weak baselines."},
        content_type="application/json",
    )
    assert edited.status_code == 200, edited.json()
    assert edited.json()["review"]["scores"] == placeholder
    assert edited.json()["review"]["weaknesses"] == "On reflection, weak baselines."

    # The page shows the scores as they are, not to be changed, and says why.
    html = _body(client.get(reverse("reviews:paper", args=[assignment.code])))
    assert 'data-testid="scores-frozen"' in html
    assert re.search(r'<input[^>]*name="score_Overall"[^>]*value="1"[^>]*disabled', html)
    page = client.post(
        reverse("reviews:paper", args=[assignment.code]),
        {
            **{f"score_{d}": "9" for d in placeholder},
            "confidence": "1",
            "strengths": "x",
            "weaknesses": "x",
        },
        follow=True,
    )
    assert "cannot change once" in _body(page)
    assert dict(review.scores.values_list("dimension", "score")) == placeholder
    # A text left out is asked for again, the frozen scores still shown as submitted.
    blank = client.post(
        reverse("reviews:paper", args=[assignment.code]),
        {"confidence": "1", "strengths": "x", "weaknesses": ""},
    )
    assert blank.status_code == 400
    assert re.search(r'<input[^>]*name="score_Overall"[^>]*value="1"[^>]*checked', _body(blank))
    assert re.search(r'<input[^>]*name="score_Overall"[^>]*value="1"[^>]*disabled', _body(blank))
