"""What a reviewer sees of a submission before submitting their own review.

Run folders carry the agent in their file names (`claude_code/`,
`gemini_log.log`, `claude_output.json`), so artifact paths are shown and
served with every word that names the agent, its model or its team replaced
by `agent`. The blind paths are what the reviewer's links use; the real path
never reaches them.
"""

import json
import posixpath
import re

from django.db.models import Exists, OuterRef, Q, prefetch_related_objects

from benchmark.models import Agent
from benchmark.roles import is_organiser
from submissions.models import Artifact, Submission

from .models import Assignment, HumanReview, ReviewRound, ReviewStatus

BLIND_WORD = "agent"


# Parts of a name too common to say anything (and the word that replaces them).
_GENERIC_PARTS = frozenset({"agent", "the", "and", "lab", "team", "model", "code", "cli", "latest"})
# A part shorter than this is replaced only as a whole word.
_MIN_FRAGMENT = 3


def _parts(word: str) -> list[str]:
    """A name's parts: split at `-_ .` and at camelCase (`BobSecretAgent`)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", word)
    return [part for part in re.split(r"[-_ ./:]+", spaced) if part]


def identity_words(agent: Agent) -> list[str]:
    """Words that would name the agent: its slug and display name, its model,
    its coding agent and its team, and each of their parts (`secret` of
    `bob-secret-agent`, `sonnet` of `claude-3-7-sonnet-20250219`), longest
    first so that the longest match wins."""
    words = {agent.name, agent.display_name, agent.base_model, agent.coding_agent}
    team = agent.team
    words |= {team.name, team.slug}
    for word in list(words):
        words |= {
            part
            for part in _parts(word or "")
            if len(part) >= _MIN_FRAGMENT and part.lower() not in _GENERIC_PARTS
        }
    return sorted((w for w in words if w and len(w) >= 2), key=len, reverse=True)


def _pattern(words: list[str]) -> re.Pattern | None:
    if not words:
        return None
    # Whole names and parts alike are replaced wherever they occur, inside a
    # longer word too (`SecretAgent_notes.txt`, `sonnet_eval.txt`), whatever the case.
    alternatives = "|".join(re.escape(word) for word in words)
    return re.compile(rf"(?:{alternatives})", re.IGNORECASE)


def blind_text(text: str, words: list[str]) -> str:
    pattern = _pattern(words)
    return pattern.sub(BLIND_WORD, text) if pattern else text


# Names that every published agent's runs carry, whoever the agent of this
# paper is: blinding only this agent's own words would still tell a reviewer
# which agent it is not (and `claude_code/` names Claude in any run).
_AGENT_CODE_FOLDER_RE = re.compile(r"^(?:claude_code|codex|gemini|[a-z0-9-]+_code)(?=/)")
_TRACE_NAME_RE = re.compile(r"^[a-z0-9-]+_output\.json$")
_AGENT_LOG_RE = re.compile(r"(?:^|(?<=/))[A-Za-z0-9.-]+_log\.log$")
_HOME_RE = re.compile(r"/(?:home|Users)/[^/\s]+/")
_PIPELINE_RE = re.compile(r"\bpipeline_[A-Za-z0-9.-]+")
_KNOWN_AGENT_WORDS = [
    "claude",
    "codex",
    "gemini",
    "openai",
    "anthropic",
    "gpt",
    "o4-mini",
    "sonnet",
    "opus",
    "haiku",
    "llama",
    "mistral",
    "deepseek",
    "qwen",
]
# A model named in a token-usage file or a log (`"model": "claude-3-7-sonnet-20250219"`).
_MODEL_FIELD_RE = re.compile(r'("(?:model|model_name|base_model)"\s*:\s*)"[^"]*"')


def blind_path(path: str, words: list[str]) -> str:
    """A run's path as a reviewer sees it: agent-named folders and files neutral."""
    path = _AGENT_CODE_FOLDER_RE.sub("agent_code", path)
    if _TRACE_NAME_RE.match(path):
        path = "agent_output.json"
    path = _AGENT_LOG_RE.sub("agent_log.log", path)
    return blind_text(path, words)


def blind_log_text(text: str, words: list[str]) -> str:
    """A log or trace as a reviewer reads it: home folders, pipeline folders,
    code folders and the names of known agents neutral, as well as the
    paper's own agent."""
    text = _MODEL_FIELD_RE.sub(r'\1"model"', text)
    text = _HOME_RE.sub("/home/user/", text)
    text = _PIPELINE_RE.sub("pipeline_agent", text)
    text = re.sub(r"\b(?:claude_code|codex|gemini)/", "agent_code/", text)
    return blind_text(text, sorted({*words, *_KNOWN_AGENT_WORDS}, key=len, reverse=True))


def submission_blind(submission: Submission) -> Submission:
    """Load the submission's artifacts once and rename them in memory (never
    saved): templates that read `submission.artifacts.all` see blind paths.
    Each artifact keeps its real path as `real_path` and the submission's
    map of real to blind paths as `blind_paths` (for figure links)."""
    words = identity_words(submission.agent)
    prefetch_related_objects([submission], "artifacts")
    artifacts = list(submission.artifacts.all())
    blind_paths = {artifact.path: blind_path(artifact.path, words) for artifact in artifacts}
    # `.all()` now returns the prefetched objects themselves, renamed here.
    for artifact in artifacts:
        artifact.real_path = artifact.path  # type: ignore[attr-defined]
        artifact.blind_paths = blind_paths  # type: ignore[attr-defined]
        artifact.identity_words = words  # type: ignore[attr-defined]
        artifact.path = blind_paths[artifact.path]
    return submission


def artifact_for_blind_path(submission: Submission, path: str) -> Artifact | None:
    """The artifact a reviewer's link names: its blind path, or a path relative
    to the paper's folder (a paper links its figures as `./figures/x.png`)."""
    words = identity_words(submission.agent)
    artifacts = list(submission.artifacts.all())
    by_blind = {blind_path(artifact.path, words): artifact for artifact in artifacts}
    wanted = posixpath.normpath(path.lstrip("/"))
    if wanted.startswith(".."):
        return None
    if wanted in by_blind:
        return by_blind[wanted]
    papers = [a for a in artifacts if a.kind == "paper"]
    for paper in papers:
        folder = posixpath.dirname(blind_path(paper.path, words))
        candidate = posixpath.normpath(posixpath.join(folder, wanted))
        if candidate in by_blind:
            return by_blind[candidate]
    return None


def under_open_review() -> Q:
    """Whether a submission's task has a paper in a review round still open:
    every run of such a task (every agent, stage and version) is left out of
    every public page, board, list and API (for everyone but organisers, signed
    in or not) until the round closes. Leaving out only the paper's own run
    would not do: the agent's other runs of the task hold the paper's files
    byte for byte (their hashes name it), and the runs of the task left
    showing would name the paper's agent by elimination (issue 40). A paper is
    in a round from "Create round" on, before any assignment (its reviewers
    could otherwise read it in public until "Assign")."""
    same_task = {"submission__task_id": OuterRef("task_id")}
    assigned = Assignment.objects.filter(review_round__closed_at__isnull=True, **same_task)
    chosen = ReviewRound.submissions.through.objects.filter(
        reviewround__closed_at__isnull=True, **same_task
    )
    return Q(Exists(assigned)) | Q(Exists(chosen))


def submissions_under_open_review(user) -> set[int]:
    """Visibility hook (`SUBMISSION_OMISSION_HOOKS`): the ids `under_open_review`
    leaves out, for everyone but organisers (anonymous visitors too: a reviewer
    signed out sees no more than signed in)."""
    if user is not None and user.is_authenticated and is_organiser(user):
        return set()
    return set(
        Submission.objects.filter(under_open_review()).values_list("id", flat=True).order_by()
    )


def submissions_pending_review_by(user) -> set[int]:
    """The papers `user` is assigned and has not submitted a review of: every
    page that names agents hides them from this user (submissions/visibility.py).
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


def _blind_call(call: dict, words: list[str]) -> dict:
    return {
        **call,
        "arguments": blind_log_text(call["arguments"], words),
        "result": blind_log_text(call["result"], words) if call["result"] is not None else None,
    }


def trace_blind(trace: dict, words: list[str]) -> dict:
    """A trace's stored steps as a reviewer reads them: every text made neutral
    like a log (`blind_log_text`), no model, agent or format, and messages as
    plain text (their stored HTML is not rewritten)."""
    # No tokens or costs: with the step's tokens a cost is a model's price.
    steps = [
        {
            **step,
            "text": blind_log_text(step["text"], words),
            "html": "",
            "model": "",
            "input_tokens": None,
            "output_tokens": None,
            "total_tokens": None,
            "cost_usd": None,
            "tool_calls": [_blind_call(call, words) for call in step["tool_calls"]],
        }
        for step in trace["steps"]
    ]
    ended = trace.get("ended") or {}
    return {
        **trace,
        "format": "",
        "format_label": "",
        "model": "",
        "agent": "",
        "note": blind_log_text(trace.get("note", ""), words),
        "totals": {
            key: value
            for key, value in (trace.get("totals") or {}).items()
            if key in ("steps", "tool_calls")
        },
        "ended": {**ended, "summary": blind_log_text(ended.get("summary", ""), words)},
        "steps": steps,
    }


# What the trace file a reviewer downloads keeps of each step and tool call:
# never a token count, a cost or a model (a step's price names its model), nor
# a tool call's id (`toolu_…` names the provider).
_TRACE_FILE_STEP_KEYS = ("index", "role", "stage", "started_at", "duration_s", "text")
_TRACE_FILE_CALL_KEYS = ("name", "arguments", "result", "is_error")


def trace_blind_file(trace: dict, words: list[str]) -> str:
    """A trace's file as the blind page serves it: the stored steps through the
    blind filter (`trace_blind`), as JSON, in place of the uploaded bytes (which
    keep each step's `usage` and `cost_usd`, issue 40). Nothing untrusted is
    parsed here: the steps were read at intake, within the trace bounds."""
    blind = trace_blind(trace, words)
    steps = [
        {
            **{key: step[key] for key in _TRACE_FILE_STEP_KEYS if key in step},
            "tool_calls": [
                {key: call[key] for key in _TRACE_FILE_CALL_KEYS if key in call}
                for call in step["tool_calls"]
            ],
        }
        for step in blind["steps"]
    ]
    shown = {
        "note": blind["note"],
        "truncated": bool(blind.get("truncated")),
        "ended": blind["ended"],
        "steps": steps,
    }
    return json.dumps(shown, ensure_ascii=False, indent=1) + "\n"


# Codex CLI logs end each model turn with its token count (`[time] tokens used: 1,234`,
# or the number on the next line in newer versions). Possessive quantifiers: a
# log is untrusted, and a line of blanks must not make the match quadratic.
_TOKENS_USED_RE = re.compile(
    r"(?im)^(\[[^\]\n]*+\][ \t]*+)?tokens used:?(?:[ \t]*+\n)?[ \t]*+[\d,]++[ \t]*+$"
)


def blind_agent_log_text(text: str, words: list[str]) -> str:
    """A coding agent's own log (a trace the site reads as text: Codex or Gemini
    CLI) as a reviewer reads it: `blind_log_text`, and no token counts."""
    return blind_log_text(_TOKENS_USED_RE.sub(r"\1tokens used: (not shown)", text), words)
