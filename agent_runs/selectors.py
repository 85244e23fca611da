"""Reads of MLR-Agent runs for the organisers' pages and API: the runs, one
run with its stages, and the transcript so far.

The transcript is the run's trace (`mlr-agent_output.json` in the workspace),
which the stages rewrite atomically after every model call, so reading it is
the cheap way to follow a run as it grows. Steps are cut to a preview here;
the whole trace is stored with the submission."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet

from submissions.trace_steps import TraceStep, mlr_agent_trace_step
from submissions.traces import (
    MLRAgentStep,
    mlr_agent_ended_read,
    mlr_agent_raw_steps,
    mlr_agent_step_read,
    mlr_agent_trace_load,
)

from .models import AgentRun
from .workspace import TRACE_NAME, workspace_of

# What one field of a step shows on the page; the stored trace keeps it all.
PREVIEW_CHARS = 4000
# Steps per answer: a long run's page catches up over a few polls.
STEPS_PER_PAGE = 50


def agent_runs_list(*, requested_by: User | None = None) -> QuerySet[AgentRun]:
    """Every run, newest first (or one organiser's), with what the list shows."""
    runs = AgentRun.objects.select_related("task", "agent", "requested_by")
    if requested_by is not None:
        runs = runs.filter(requested_by=requested_by)
    return runs


def agent_run_with_stages(*, run_id: int) -> AgentRun | None:
    return (
        AgentRun.objects.select_related("task", "agent", "requested_by", "submission")
        .prefetch_related("stages")
        .filter(pk=run_id)
        .first()
    )


def _clip(text: str) -> str:
    if len(text) <= PREVIEW_CHARS:
        return text
    return f"{text[:PREVIEW_CHARS]}\n… ({len(text) - PREVIEW_CHARS} more characters)"


def _preview(value: Any) -> str:
    return _clip(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def _step(step: MLRAgentStep) -> dict[str, Any]:
    return {
        "index": step.index,
        "stage": step.stage,
        "started_at": step.started_at,
        "duration_s": step.duration_s,
        "tokens": (step.input_tokens or 0) + (step.output_tokens or 0),
        "cost_usd": step.cost_usd,
        "text": _preview(step.content or ""),
        "tool_calls": [
            {"name": call.name, "arguments": _preview(call.arguments)} for call in step.tool_calls
        ],
        "tool_results": [
            {"name": result.name, "content": _preview(result.content or "")}
            for result in step.tool_results
        ],
    }


@dataclass
class Transcript:
    """The steps from `after` on (at most STEPS_PER_PAGE), `next_after` to ask for
    the rest, and whether the trace could be read at all. `reset`: a stage that was
    run again dropped its earlier steps, so the reader starts over from these."""

    available: bool
    reset: bool = False
    total: int = 0
    next_after: int = 0
    steps: list[dict[str, Any]] = field(default_factory=list)
    ended: dict[str, Any] | None = None
    # The same steps as the page draws them (`submissions/_trace_step.html`).
    shown: list[TraceStep] = field(default_factory=list)


def agent_run_transcript(*, run: AgentRun, after: int = 0) -> Transcript:
    path = workspace_of(run.pk) / TRACE_NAME
    try:
        data = mlr_agent_trace_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        data = None  # never half-written (atomic replace), but a removed workspace races
    if data is None:
        return Transcript(available=path.parent.is_dir(), next_after=after)
    raw_steps = mlr_agent_raw_steps(data)
    reset = after > len(raw_steps)
    start = 0 if reset else max(0, after)
    page = [
        mlr_agent_step_read(raw, start + i)
        for i, raw in enumerate(raw_steps[start : start + STEPS_PER_PAGE])
    ]
    ended = mlr_agent_ended_read(data)
    return Transcript(
        available=True,
        reset=reset,
        total=len(raw_steps),
        next_after=start + len(page),
        steps=[_step(step) for step in page],
        ended={"reason": ended.reason, "summary": ended.summary} if ended else None,
        shown=[mlr_agent_trace_step(step, clip=_clip) for step in page],
    )
