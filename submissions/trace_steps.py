"""One trace step as every page shows it: the trace viewer (a submission's
trace and a reviewer's blind copy) and an agent run's live transcript all
prepare a step with a function here and draw it with one template,
`submissions/_trace_step.html`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString

from .traces import MLRAgentStep


@dataclass(frozen=True)
class StepCall:
    name: str
    arguments: str
    # None: no result recorded; "": the tool printed nothing.
    result: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class TraceStep:
    index: int
    role: str
    text: str = ""
    # The message as HTML, cleaned at intake; None shows `text` as it is.
    html: SafeString | None = None
    stage: str = ""
    continued: bool = False
    started_at: str = ""
    duration_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cost_usd: float | None = None
    tool_calls: list[StepCall] = field(default_factory=list)
    # The paper's numbers this step's tool output printed first (the trace viewer).
    numbers: Sequence[Mapping[str, Any]] = ()


def trace_step(
    step: Mapping[str, Any],
    *,
    html: SafeString | None = None,
    numbers: Sequence[Mapping[str, Any]] = (),
) -> TraceStep:
    """A step of a stored trace (`submissions.traces`' step dicts) for the page."""
    return TraceStep(
        index=step["index"],
        role=step.get("role") or "",
        text=step.get("text") or "",
        html=html,
        stage=step.get("stage") or "",
        continued=bool(step.get("continued")),
        started_at=step.get("started_at") or "",
        duration_s=step.get("duration_s"),
        input_tokens=step.get("input_tokens"),
        output_tokens=step.get("output_tokens"),
        total_tokens=step.get("total_tokens"),
        cost_usd=step.get("cost_usd"),
        tool_calls=[
            StepCall(
                name=call.get("name") or "",
                arguments=call.get("arguments") or "",
                result=call.get("result"),
                is_error=bool(call.get("is_error")),
            )
            for call in step.get("tool_calls") or []
        ],
        numbers=numbers,
    )


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def mlr_agent_trace_step(step: MLRAgentStep, *, clip: Callable[[str], str]) -> TraceStep:
    """A step of a run's trace as it grows (`traces.mlr_agent_step_read`), each
    text cut by `clip`: its calls with their results, as the stored trace pairs them."""
    results = {result.tool_call_id: result for result in step.tool_results if result.tool_call_id}
    calls = []
    for call in step.tool_calls:
        result = results.pop(call.id, None) if call.id else None
        calls.append(
            StepCall(
                name=call.name,
                arguments=clip(_text(call.arguments)),
                result=clip(_text(result.content)) if result is not None else None,
                is_error=result.is_error if result is not None else False,
            )
        )
    # A result whose call is not in the step (a trace cut short) still shows.
    for result in step.tool_results:
        if not result.tool_call_id or result.tool_call_id in results:
            calls.append(
                StepCall(
                    name=result.name,
                    arguments="",
                    result=clip(_text(result.content)),
                    is_error=result.is_error,
                )
            )
    return TraceStep(
        index=step.index,
        role=step.role,
        text=clip(_text(step.content)),
        stage=step.stage,
        started_at=step.started_at,
        duration_s=step.duration_s,
        input_tokens=step.input_tokens,
        output_tokens=step.output_tokens,
        cost_usd=step.cost_usd,
        tool_calls=calls,
    )
