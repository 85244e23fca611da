"""What a reviewer sees of a submission before submitting their own review.

Run folders carry the agent in their file names (`claude_code/`,
`gemini_log.log`, `claude_output.json`), so artifact paths are shown and
served with every word that names the agent, its model or its team replaced
by `agent`. The blind paths are what the reviewer's links use; the real path
never reaches them.
"""

import posixpath
import re

from django.db.models import prefetch_related_objects

from benchmark.models import Agent, Artifact, Submission

from .models import Assignment, HumanReview, ReviewStatus
from .roles import is_organiser

BLIND_WORD = "agent"


def identity_words(agent: Agent) -> list[str]:
    """Words that would name the agent: its slug and display name, its model,
    its coding agent and its team, plus the slug's first part (`gemini` of
    `gemini-cli`), longest first so that the longest match wins."""
    words = {agent.name, agent.display_name, agent.base_model, agent.coding_agent}
    team = agent.team
    words |= {team.name, team.slug}
    head = re.split(r"[-_ .]", agent.name)[0]
    if len(head) >= 4:
        words.add(head)
    return sorted((w for w in words if w and len(w) >= 2), key=len, reverse=True)


def _pattern(words: list[str]) -> re.Pattern | None:
    if not words:
        return None
    alternatives = "|".join(re.escape(word) for word in words)
    return re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])", re.IGNORECASE)


def blind_text(text: str, words: list[str]) -> str:
    pattern = _pattern(words)
    return pattern.sub(BLIND_WORD, text) if pattern else text


def submission_blind(submission: Submission) -> Submission:
    """Load the submission's artifacts once and rename them in memory (never
    saved): templates that read `submission.artifacts.all` see blind paths."""
    words = identity_words(submission.agent)
    prefetch_related_objects([submission], "artifacts")
    # `.all()` now returns the prefetched objects themselves, renamed here.
    for artifact in submission.artifacts.all():
        artifact.path = blind_text(artifact.path, words)
    return submission


def artifact_for_blind_path(submission: Submission, path: str) -> Artifact | None:
    """The artifact a reviewer's link names: its blind path, or a path relative
    to the paper's folder (a paper links its figures as `./figures/x.png`)."""
    words = identity_words(submission.agent)
    artifacts = list(submission.artifacts.all())
    by_blind = {blind_text(artifact.path, words): artifact for artifact in artifacts}
    wanted = posixpath.normpath(path.lstrip("/"))
    if wanted.startswith(".."):
        return None
    if wanted in by_blind:
        return by_blind[wanted]
    papers = [a for a in artifacts if a.kind == "paper"]
    for paper in papers:
        folder = posixpath.dirname(blind_text(paper.path, words))
        candidate = posixpath.normpath(posixpath.join(folder, wanted))
        if candidate in by_blind:
            return by_blind[candidate]
    return None


def submissions_pending_review_by(user) -> set[int]:
    """The papers `user` is assigned and has not submitted a review of: every
    page that names agents hides them from this user (benchmark/visibility.py).
    Organisers see everything."""
    if is_organiser(user):
        return set()
    reviewed = HumanReview.objects.filter(reviewer=user, status=ReviewStatus.SUBMITTED).values(
        "submission_id"
    )
    return set(
        Assignment.objects.filter(reviewer=user)
        .exclude(submission_id__in=reviewed)
        .values_list("submission_id", flat=True)
    )
