"""A reviewer reads a paper's coding-agent trace step by step, blind: no agent,
model, team or coding-agent names, no home or pipeline folders."""

import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from reviews.services import review_round_close
from submissions.models import ArtifactKind
from tests.submissions.factories import artifact_add

from .scenario import AGENT_MODEL, AGENT_NAME, IDENTITY, scenario_build

pytestmark = pytest.mark.django_db


def claude_trace(mlrbench_data: Path) -> bytes:
    """The published Claude Code trace, with this paper's agent named in it too."""
    path = mlrbench_data / "agent_results/end2end_claude/iclr2025_bi_align/claude_output.json"
    entries = json.loads(path.read_text())
    entries.insert(1, {"role": "user", "content": f"You are {AGENT_NAME} on {AGENT_MODEL}."})
    return json.dumps(entries).encode()


def test_the_trace_viewer_is_blind_for_a_reviewer_and_names_all_for_others(client, mlrbench_data):
    s = scenario_build()
    artifact_add(
        s.submission, "claude_output.json", ArtifactKind.TRACE, claude_trace(mlrbench_data)
    )
    code = s.assignment_a.code
    client.force_login(s.reviewer_a)
    paper_url = reverse("reviews:paper", args=[code])
    paper = client.get(paper_url).content.decode()
    (link,) = re.findall(r'href="\./([^"#]*\?steps=1)"', paper)
    assert link == "agent_output.json?steps=1"

    response = client.get(paper_url + link)

    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('data-testid="trace-step"') == 29
    assert "<summary><code>Bash</code>" in html  # tool calls are there, folded
    lowered = html.lower()
    # The model's own name goes with the format and model lines; the task's prompt,
    # the same for every agent, may still name models to use in the experiment.
    assert "claude-3-7-sonnet-20250219" not in lowered
    for word in [*IDENTITY, "claude", "/home/chenhui", "pipeline_claude"]:
        assert word.lower() not in lowered, word
    assert "You are agent on agent." in html
    assert 'data-testid="trace-format"' not in html and 'data-testid="trace-model"' not in html

    # Anyone else sees the agent's own trace page, names and all, once the
    # round is closed (while it is open, only organisers do: issue 32).
    review_round_close(review_round=s.review_round)
    client.force_login(s.reviewer_b)
    own = client.get(f"/submissions/{s.submission.pk}/trace/claude_output.json").content.decode()
    assert "claude-3-7-sonnet-20250219" in own and AGENT_NAME in own
    # Reviewer A cannot reach it there.
    client.force_login(s.reviewer_a)
    assert client.get(f"/submissions/{s.submission.pk}/trace/claude_output.json").status_code == 404


def test_a_codex_log_on_the_blind_page_has_no_token_counts(client, mlrbench_data):
    """Issue 40: the coding agent's own log, served raw and as the page's log
    tail, loses its per-turn `tokens used` (tokens with a price name a model)."""
    s = scenario_build()
    log = mlrbench_data / "agent_results/end2end_codex/iclr2025_bi_align/codex_log.log"
    artifact_add(s.submission, "codex_log.log", ArtifactKind.LOG, log.read_bytes())
    assert b"tokens used: 2564" in log.read_bytes()
    client.force_login(s.reviewer_a)
    paper_url = reverse("reviews:paper", args=[s.assignment_a.code])
    detail = client.get(f"/api/reviews/assignments/{s.assignment_a.code}/").json()
    (shown,) = [a for a in detail["artifacts"] if a["path"] == "agent_log.log"]

    raw = client.get(shown["url"]).content.decode()
    page = client.get(paper_url).content.decode()

    assert "exec bash -lc" in raw and "tokens used: (not shown)" in raw
    for text in (raw, page):
        assert not re.search(r"tokens used:?\s*\d", text)
        assert "codex" not in text.lower() and "/home/chenhui" not in text
