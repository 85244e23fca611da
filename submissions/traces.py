"""Coding-agent traces, read once at intake into one list of steps.

Four formats are known: Claude Code's `claude_output.json` (a JSON list of
API messages, a message's text and tool calls split over entries that share
its id, tool results in the user turns after it, the total cost in a last
`system` entry), the MLR-Agent's own `mlr-agent_output.json` (`"format":
"mlr-agent-trace"`), Codex's `codex_log.log` (`[time] header` sections: the
instructions, thinking, `exec` commands and their results, patches, `tokens
used`) and Gemini CLI's `gemini_log.log` (the model's messages run together,
no tool calls or tokens: kept as one message).

Traces are untrusted. Parsing is bounded by size (`TRACE_MAX_BYTES`), time
(`TRACE_PARSE_SECONDS`), steps (`TRACE_MAX_STEPS`) and characters per text
(`TRACE_MAX_FIELD_CHARS`); past a bound the trace is cut and says so in its
`note`, and a trace that cannot be read keeps no steps and says why. Messages'
markdown becomes clean HTML here, once; pages serve what was stored.
"""

import contextlib
import json
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings

from common.child_pool import ChildFailed, ChildTimeout, child_run
from common.rendering import INLINE_RENDER_BYTES, markdown_render_budgeted

# Bump when the step list's shape or content changes: stored traces are read again.
TRACE_VERSION = 2
# A step holds at most this many tool calls; the rest continue in steps of their
# own, so the trace page, which cuts pages by steps and calls, stays bounded
# however many calls one turn made (issue 32: 20,000 in one Codex turn).
STEP_MAX_CALLS = 50
MLR_AGENT_FORMAT = "mlr-agent-trace"
FORMAT_LABELS = {
    "claude-code": "Claude Code",
    "mlr-agent": "MLR-Agent",
    "codex": "Codex CLI",
    "gemini-cli": "Gemini CLI",
}
_AGENT_LOG_RE = re.compile(r"^(codex|gemini)[a-z0-9.-]*_log\.log$")
_CODEX_HEADER_RE = re.compile(r"^\[(\d{4}-\d\d-\d\dT[0-9:.]+Z?)\] (.*)$")
_CODEX_RESULT_RE = re.compile(
    r"^(?P<command>.*?) (?:exited (?P<code>-?\d+)|succeeded) in [0-9.]+m?s:$"
)
_CODEX_SNIFF_BYTES = 4096


def trace_format_of(path: str, kind: str) -> str | None:
    """Which trace reader a run's file may need, from its path: a coding agent's
    `*_output.json` at the run's root, or a Codex or Gemini CLI log."""
    from .models import ArtifactKind  # here: the parsing child imports this module bare

    if kind == ArtifactKind.TRACE:
        return "json"
    name = path.lower()
    if kind == ArtifactKind.LOG and "/" not in name and (match := _AGENT_LOG_RE.match(name)):
        return "codex" if match.group(1) == "codex" else "gemini-cli"
    return None


_CUT_NOTE = "\n[… more characters cut]"


class _Cut(Exception):
    """A bound was reached: the steps so far are kept, with the note."""


@dataclass(frozen=True)
class TraceLimits:
    """The bounds of one parse (settings `TRACE_*`), handed to the parsing child,
    which has no settings."""

    seconds: float
    max_steps: int
    max_chars: int
    max_total_chars: int

    @classmethod
    def from_settings(cls, seconds: float | None = None) -> "TraceLimits":
        return cls(
            seconds=settings.TRACE_PARSE_SECONDS if seconds is None else seconds,
            max_steps=settings.TRACE_MAX_STEPS,
            max_chars=settings.TRACE_MAX_FIELD_CHARS,
            max_total_chars=settings.TRACE_MAX_TOTAL_CHARS,
        )


# A `_Writer` past the deadline: the budget words the note (it knows the time).
_TIME_CUT = "time"


@dataclass
class _Budget:
    deadline: float
    max_steps: int
    max_chars: int
    # All the texts together: what a page view loads stays bounded however
    # many tool calls a step holds.
    max_total_chars: int
    seconds: float = 0.0  # what `deadline` was counted from, for the notes
    used_chars: int = 0
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_limits(cls, limits: TraceLimits) -> "_Budget":
        return cls(
            deadline=time.monotonic() + limits.seconds,
            seconds=limits.seconds,
            max_steps=limits.max_steps,
            max_chars=limits.max_chars,
            max_total_chars=limits.max_total_chars,
        )

    def clip(self, value: object) -> str:
        text = self.text_of(value)
        # A text `_limited` already cut keeps its note (and no count: how
        # much more there was is not known, it was never written).
        already_cut = text.endswith(_CUT_NOTE) and len(text) == self.max_chars + len(_CUT_NOTE)
        if len(text) > self.max_chars and not already_cut:
            cut = len(text) - self.max_chars
            text = text[: self.max_chars] + f"\n[… {cut:,} more characters cut]"
        self.charge(len(text))
        return text

    def text_of(self, value: object) -> str:
        """A value as text (`_as_text`): a string as it is (`clip` cuts it,
        counting), anything else written up to `max_chars`."""
        if isinstance(value, str):
            return value
        return self._limited(_as_text(value, self.max_chars, self.deadline))

    def arguments_of(self, value: object) -> str:
        """Tool-call arguments as text (`_arguments_text`), as `text_of`."""
        if isinstance(value, str):
            raw = value
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):
                return raw
        return self._limited(_arguments_text(value, self.max_chars, self.deadline))

    def _limited(self, text: str) -> str:
        if len(text) > self.max_chars:
            return text[: self.max_chars] + _CUT_NOTE
        return text

    def charge(self, chars: int) -> None:
        self.used_chars += chars
        if self.used_chars > self.max_total_chars:
            raise _Cut(
                f"cut at {self.max_total_chars:,} characters of text; the rest of the trace "
                "is not shown"
            )

    def check(self, steps: list[dict]) -> None:
        if len(steps) >= self.max_steps:
            raise _Cut(f"cut at {self.max_steps:,} steps; the rest of the trace is not shown")
        if time.monotonic() > self.deadline:
            raise _Cut(
                f"cut after {len(steps):,} steps: reading the trace took longer than "
                f"{self.seconds:g} s"
            )


class _Full(Exception):
    """The text being written reached its limit: the rest is not needed."""


# How many pieces a `_Writer` takes between two looks at the clock.
_CLOCK_EVERY = 4096


class _Writer:
    """Pieces of one text, in order, up to `limit` characters: past the limit
    it stops the writing (`_Full`), so a deeply nested value costs what is
    kept, never the whole text; past the deadline it cuts the trace."""

    def __init__(self, limit: int, deadline: float | None):
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit
        self.deadline = deadline
        self.full = False
        self._pieces = 0

    def add(self, piece: str) -> None:
        if not piece:
            return
        room = self.limit - self.size
        if len(piece) > room:
            self.parts.append(piece[:room])
            self.size = self.limit
            self.full = True
            raise _Full
        self.parts.append(piece)
        self.size += len(piece)
        self._pieces += 1
        clock_due = self.deadline is not None and self._pieces % _CLOCK_EVERY == 0
        if clock_due and time.monotonic() > cast(float, self.deadline):
            raise _Cut(_TIME_CUT)

    def room(self) -> int:
        return self.limit - self.size

    def text(self) -> str:
        return "".join(self.parts)


# Without a budget (tests, `_pretty` called directly): a generous bound.
_UNBOUNDED_CHARS = 10**9


def _as_text(value: object, limit: int = _UNBOUNDED_CHARS, deadline: float | None = None) -> str:
    """A message's or a result's content as text: content blocks' text, else
    the value as a person reads it (`_pretty`); at most `limit` characters
    (and one more when there was more, so a caller can tell)."""
    if isinstance(value, str):
        return value
    out = _Writer(limit + 1, deadline)
    with contextlib.suppress(_Full):
        _write_text(value, out)
    return out.text()


def _write_text(value: object, out: _Writer) -> None:
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, list) and all(
        isinstance(item, dict) and "text" in item for item in value
    ):
        # Content blocks: [{"type": "text", "text": ...}, ...]
        for number, item in enumerate(value):
            if number:
                out.add("\n")
            _write_text(item["text"], out)
    else:
        _write_pretty(value, "", out)


def _pretty(value: object, indent: str = "") -> str:
    """Nested JSON as `key: value` lines with strings as they are (a file's
    content keeps its line breaks, never `\\n`), lists as `- item` lines."""
    out = _Writer(_UNBOUNDED_CHARS, None)
    _write_pretty(value, indent, out)
    return out.text()


def _write_pretty(value: object, indent: str, out: _Writer) -> None:
    # Written piece by piece, once: re-joining the text at every level of
    # nesting would copy it once per level (quadratic in depth times size).
    if value is None:
        return
    if isinstance(value, str):
        if "\n" not in value:
            out.add(value)
            return
        # Only what can still be kept is split into lines.
        prefix = indent + "  "
        for line in value[: out.room() + 1].splitlines():
            out.add("\n")
            out.add(prefix)
            out.add(line)
        return
    if isinstance(value, dict):
        for number, (key, item) in enumerate(value.items()):
            if number:
                out.add("\n")
            _write_line(f"{indent}{key}:", item, indent, out)
        return
    if isinstance(value, list):
        for number, item in enumerate(value):
            if number:
                out.add("\n")
            _write_line(f"{indent}-", item, indent, out)
        return
    out.add(json.dumps(value))


def _write_line(head: str, item: object, indent: str, out: _Writer) -> None:
    """`head` then the item: on the lines below when it is nested or a text
    of several lines, after a space when it is one line, nothing when empty."""
    out.add(head)
    if isinstance(item, dict | list):
        if item:
            out.add("\n")
            _write_pretty(item, indent + "  ", out)
        else:
            out.add(" " + json.dumps(item))
    elif item is None or item == "":
        return
    elif isinstance(item, str) and "\n" in item:
        _write_pretty(item, indent, out)
    else:
        out.add(" ")
        _write_pretty(item, indent, out)


def _arguments_text(
    value: object, limit: int = _UNBOUNDED_CHARS, deadline: float | None = None
) -> str:
    """Tool-call arguments as a person reads them (`_pretty`)."""
    if isinstance(value, str):
        raw = value
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return raw
    out = _Writer(limit + 1, deadline)
    with contextlib.suppress(_Full):
        _write_pretty(value, "", out)
    return out.text()


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return float(value) if value >= 0 else None


def _count(value: object) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


def _step(index: int, role: str, text: str, budget: _Budget, **extra: Any) -> dict:
    return {
        "index": index,
        "role": role,
        "text": budget.clip(text),
        "html": "",
        "tool_calls": [],
        "stage": "",
        "started_at": "",
        "duration_s": None,
        "model": "",
        "input_tokens": None,
        "output_tokens": None,
        "total_tokens": None,
        "cost_usd": None,
        **extra,
    }


# What a tool call costs the budget besides its texts (its keys when stored):
# a trace of a million empty calls is bounded too.
CALL_CHARS = 100


def _call(budget: _Budget, *, call_id: str, name: str, arguments: object) -> dict:
    budget.charge(CALL_CHARS)
    return {
        "id": str(call_id)[:200],
        "name": str(name)[:200],
        "arguments": budget.clip(budget.arguments_of(arguments)),
        "result": None,
        "is_error": False,
    }


# --- Claude Code -------------------------------------------------------------


@dataclass
class _Parsed:
    format: str = ""
    steps: list[dict] = field(default_factory=list)
    model: str = ""
    agent: str = ""
    ended: dict = field(default_factory=dict)
    cost_usd: float | None = None


# A usage entry's numbers kept for pricing (Anthropic's and OpenAI's have a handful).
_USAGE_KEYS = 20


def _claude_assistant(
    entry: dict, parsed: _Parsed, calls: dict[str, dict], budget: _Budget
) -> None:
    steps = parsed.steps
    message_id = str(entry.get("id") or "")
    blocks = _list(entry.get("content"))
    last = steps[-1] if steps else None
    # Claude Code writes one API message as several entries with the same id and usage.
    if last is None or not message_id or last.get("message_id") != message_id:
        budget.check(steps)
        model = str(entry.get("model") or "")[:200]
        parsed.model = parsed.model or model
        last = _step(len(steps), "assistant", "", budget, message_id=message_id, model=model)
        usage = entry.get("usage")
        if isinstance(usage, dict):
            # Priced by the parent (`_steps_price`): the numbers only, bounded.
            last["usage"] = {
                str(key)[:60]: value
                for key, value in list(usage.items())[:_USAGE_KEYS]
                if isinstance(value, int | float) and not isinstance(value, bool)
            }
        steps.append(last)
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            joined = "\n\n".join(
                part for part in (last["text"], budget.text_of(block.get("text"))) if part
            )
            last["text"] = budget.clip(joined)
        elif block.get("type") == "tool_use":
            call = _call(
                budget,
                call_id=block.get("id", ""),
                name=block.get("name", ""),
                arguments=block.get("input"),
            )
            last["tool_calls"].append(call)
            calls[call["id"]] = call


def _claude_user(entry: dict, parsed: _Parsed, calls: dict[str, dict], budget: _Budget) -> None:
    content = entry.get("content")
    if isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    ):
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            call = calls.get(str(block.get("tool_use_id") or ""))
            if call is not None:
                call["result"] = budget.clip(budget.text_of(block.get("content")))
                call["is_error"] = block.get("is_error") is True
        return
    budget.check(parsed.steps)
    parsed.steps.append(_step(len(parsed.steps), "user", budget.text_of(content), budget))


def _claude_code(data: list, parsed: _Parsed, budget: _Budget) -> None:
    parsed.format, parsed.agent = "claude-code", "Claude Code"
    calls: dict[str, dict] = {}
    for entry in data:
        if not isinstance(entry, dict):
            continue
        role = entry.get("role")
        if role == "assistant":
            _claude_assistant(entry, parsed, calls, budget)
        elif role == "user":
            _claude_user(entry, parsed, calls, budget)
        elif role == "system" and "result" in entry:
            parsed.ended = {
                "reason": "finish",
                "summary": budget.clip(budget.text_of(entry["result"])),
            }
            parsed.cost_usd = _number(entry.get("cost_usd"))


# --- the MLR-Agent's own trace -----------------------------------------------
# The one reader of the format the site's agent runs write (agent_runs.workspace):
# intake turns a trace into the stored step list, and a live run's page reads
# the same file as it grows (agent_runs.selectors). Values here are the trace's,
# unbounded: each use cuts them to its own bounds.


@dataclass(frozen=True)
class MLRAgentCall:
    id: str
    name: str
    arguments: object


@dataclass(frozen=True)
class MLRAgentResult:
    tool_call_id: str
    name: str
    content: object
    is_error: bool


@dataclass(frozen=True)
class MLRAgentStep:
    index: int
    role: str
    content: object
    stage: str
    started_at: str
    duration_s: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    tool_calls: list[MLRAgentCall]
    tool_results: list[MLRAgentResult]


@dataclass(frozen=True)
class MLRAgentEnded:
    reason: str
    summary: object


def mlr_agent_trace_load(text: str) -> dict[str, Any] | None:
    """The document of an MLR-Agent trace: a JSON object with a list of `steps`
    (its `format` is MLR_AGENT_FORMAT); None for anything else."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("steps"), list) else None


def mlr_agent_raw_steps(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The trace's steps, unread (entries that are not objects are no steps)."""
    return [raw for raw in _list(data.get("steps")) if isinstance(raw, dict)]


def mlr_agent_step_read(raw: dict[str, Any], position: int) -> MLRAgentStep:
    """One step of the trace (`position`: its place among the steps)."""
    message = _dict(raw.get("message"))
    usage = _dict(raw.get("usage"))
    calls = []
    for raw_call in _list(message.get("tool_calls")):
        if isinstance(raw_call, dict):
            function = _dict(raw_call.get("function"))
            calls.append(
                MLRAgentCall(
                    id=str(raw_call.get("id", "")),
                    name=str(function.get("name", "")),
                    arguments=function.get("arguments", ""),
                )
            )
    results = [
        MLRAgentResult(
            tool_call_id=str(result.get("tool_call_id") or ""),
            name=str(result.get("name", "")),
            content=result.get("content"),
            is_error=result.get("is_error") is True,
        )
        for result in _list(raw.get("tool_results"))
        if isinstance(result, dict)
    ]
    index = raw.get("index")
    return MLRAgentStep(
        index=index if isinstance(index, int) and not isinstance(index, bool) else position,
        role=str(message.get("role") or "assistant"),
        content=message.get("content"),
        stage=str(raw.get("stage") or ""),
        started_at=str(raw.get("started_at") or ""),
        duration_s=_number(raw.get("duration_s")),
        input_tokens=_count(usage.get("prompt_tokens")),
        output_tokens=_count(usage.get("completion_tokens")),
        cost_usd=_number(raw.get("cost_usd")),
        tool_calls=calls,
        tool_results=results,
    )


def mlr_agent_ended_read(data: dict[str, Any]) -> MLRAgentEnded | None:
    """How the run's coding loop ended, once it has."""
    ended = data.get("ended")
    if not isinstance(ended, dict):
        return None
    return MLRAgentEnded(reason=str(ended.get("reason") or ""), summary=ended.get("summary"))


def _mlr_agent_step(read: MLRAgentStep, steps: list[dict], budget: _Budget) -> None:
    step = _step(
        len(steps),
        read.role[:20],
        budget.text_of(read.content),
        budget,
        stage=read.stage[:40],
        started_at=read.started_at[:40],
        duration_s=read.duration_s,
        input_tokens=read.input_tokens,
        output_tokens=read.output_tokens,
        cost_usd=read.cost_usd,
    )
    # In the list before its tool calls: a cut among them keeps the step.
    steps.append(step)
    results = {result.tool_call_id: result for result in read.tool_results}
    for read_call in read.tool_calls:
        call = _call(
            budget, call_id=read_call.id, name=read_call.name, arguments=read_call.arguments
        )
        step["tool_calls"].append(call)
        if (result := results.get(call["id"])) is not None:
            call["result"] = budget.clip(budget.text_of(result.content))
            call["is_error"] = result.is_error


def _mlr_agent(data: dict, parsed: _Parsed, budget: _Budget) -> None:
    parsed.format = "mlr-agent"
    parsed.model = str(data.get("model") or "")[:200]
    parsed.agent = str(data.get("agent") or "")[:200]
    if not isinstance(data.get("steps"), list):
        raise TraceUnreadable("an MLR-Agent trace needs a list of `steps`")
    for raw in mlr_agent_raw_steps(data):
        budget.check(parsed.steps)
        _mlr_agent_step(mlr_agent_step_read(raw, len(parsed.steps)), parsed.steps, budget)


def _mlr_agent_ended(data: dict, parsed: _Parsed, budget: _Budget) -> None:
    ended = mlr_agent_ended_read(data)
    if ended is not None:
        parsed.ended = {
            "reason": ended.reason[:40],
            "summary": budget.clip(budget.text_of(ended.summary)),
        }


# --- Codex and Gemini CLI logs -----------------------------------------------


def _codex_section(header: str, body: str, parsed: _Parsed, state: dict, budget: _Budget) -> None:
    steps = parsed.steps

    def current() -> dict:
        # One model turn per step: it ends at `tokens used`.
        if state.get("open") is None:
            budget.check(steps)
            state["open"] = _step(len(steps), "assistant", "", budget, model=parsed.model)
            # The turn's calls still waiting for a result, first first: a
            # result header takes the head, never rescans the turn's calls.
            state["pending"] = deque()
            steps.append(state["open"])
        return state["open"]

    def call(name: str, arguments: str) -> None:
        made = _call(budget, call_id="", name=name, arguments=arguments)
        current()["tool_calls"].append(made)
        state["pending"].append(made)

    if header.startswith("OpenAI Codex"):
        found = re.search(r"^model: (.+)$", body, re.MULTILINE)
        parsed.model = found.group(1).strip()[:200] if found else ""
    elif header == "User instructions:":
        budget.check(steps)
        steps.append(_step(len(steps), "user", body, budget))
    elif header in ("thinking", "codex"):
        step = current()
        step["text"] = budget.clip("\n\n".join(part for part in (step["text"], body) if part))
        if header == "codex":
            parsed.ended = {"reason": "finish", "summary": budget.clip(body)}
    elif header.startswith("exec "):
        command = header.removeprefix("exec ").rsplit(" in /", 1)[0]
        call("exec", command)
    elif header.startswith("apply_patch "):
        call("apply_patch", body)
    elif header.startswith("tokens used:"):
        tokens = header.removeprefix("tokens used:").strip().replace(",", "")
        step = current()
        step["total_tokens"] = int(tokens) if tokens.isdigit() else None
        state["open"] = None
    elif (result := _CODEX_RESULT_RE.match(header)) is not None:
        current()
        _codex_result(state["pending"], result, body, budget)


def _codex_result(pending: deque[dict], result: re.Match[str], body: str, budget: _Budget) -> None:
    """A command's result goes to the turn's first call still waiting for one."""
    if pending:
        done = pending.popleft()
        done["result"] = budget.clip(body)
        done["is_error"] = result.group("code") not in (None, "0")


def _codex(text: str, parsed: _Parsed, budget: _Budget) -> None:
    parsed.format, parsed.agent = "codex", "Codex CLI"
    state: dict = {}
    header: str | None = None
    started = ""
    body: list[str] = []

    def flush() -> None:
        if header is not None:
            before = len(parsed.steps)
            _codex_section(header, "\n".join(body).strip("\n"), parsed, state, budget)
            for step in parsed.steps[before:]:
                step["started_at"] = started

    for line in text.splitlines():
        match = _CODEX_HEADER_RE.match(line)
        if match is None:
            body.append(line)
            continue
        flush()
        started, header, body = match.group(1), match.group(2), []
    flush()


def _gemini_cli(text: str, parsed: _Parsed, budget: _Budget) -> None:
    parsed.format, parsed.agent = "gemini-cli", "Gemini CLI"
    parsed.steps.append(_step(0, "assistant", text, budget))
    budget.notes.append(
        "Gemini CLI logs hold the model's messages run together, without tool calls or "
        "tokens: shown as one message."
    )


# --- reading a file ----------------------------------------------------------


class TraceUnreadable(Exception):
    """Not a trace this site reads; the message says why."""


def _json_trace(data: bytes, parsed: _Parsed, budget: _Budget) -> None:
    try:
        loaded = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise TraceUnreadable(f"not JSON ({type(exc).__name__})") from None
    del data  # the bytes are not needed past here: memory for the parse
    if isinstance(loaded, dict) and loaded.get("format") == MLR_AGENT_FORMAT:
        try:
            _mlr_agent(loaded, parsed, budget)
        finally:
            _mlr_agent_ended(loaded, parsed, budget)
    elif isinstance(loaded, list):
        _claude_code(loaded, parsed, budget)
    else:
        raise TraceUnreadable(
            "neither a Claude Code trace (a JSON list of messages) nor an MLR-Agent trace "
            f'("format": "{MLR_AGENT_FORMAT}")'
        )


def _text_trace(data: bytes, reader: str, parsed: _Parsed, budget: _Budget) -> None:
    text = data.decode("utf-8", errors="replace")
    if reader == "codex":
        if not _CODEX_HEADER_RE.match(text[:_CODEX_SNIFF_BYTES].split("\n", 1)[0]):
            raise TraceUnreadable("not a Codex CLI log (no `[time] OpenAI Codex` first line)")
        _codex(text, parsed, budget)
    else:
        _gemini_cli(text, parsed, budget)
    if not parsed.steps:
        raise TraceUnreadable("no steps found")


def trace_read(data: bytes, reader: str, limits: TraceLimits) -> dict[str, Any]:
    """The steps of a trace's bytes within `limits`, as plain values: run in the
    parsing child (`submissions.trace_worker`), so it reads no settings and no
    database. `{"note": ...}` alone when the trace cannot be read; otherwise the
    parse, its steps neither priced nor rendered yet (`trace_parse` does that)."""
    budget = _Budget.from_limits(limits)
    parsed = _Parsed()
    truncated = False
    try:
        if reader == "json":
            _json_trace(data, parsed, budget)
        else:
            _text_trace(data, reader, parsed, budget)
    except TraceUnreadable as exc:
        return {"note": f"not read: {exc}"}
    except RecursionError:
        return {"note": "not read: the trace is nested too deeply"}
    except _Cut as cut:
        # What was read before the bound is kept.
        note = str(cut)
        if note == _TIME_CUT:
            note = f"cut: reading the trace took longer than {budget.seconds:g} s"
        budget.notes.insert(0, note)
        truncated = True
    for step in parsed.steps:
        step.pop("message_id", None)
    return {
        "format": parsed.format,
        "model": parsed.model,
        "agent": parsed.agent,
        "steps": parsed.steps,
        "ended": parsed.ended,
        "cost_usd": parsed.cost_usd,
        "truncated": truncated,
        "notes": budget.notes,
        "deadline_left": budget.deadline - time.monotonic(),
    }


def _steps_price(steps: list[dict]) -> None:
    """Each Claude Code step's tokens and cost from its usage (`submissions.costs`,
    with the organisers' prices), here in the parent, which has the database."""
    from .costs import price_table, step_cost

    prices: tuple | None = None
    for step in steps:
        usage = step.pop("usage", None)
        if usage is None:
            continue
        prices = price_table() if prices is None else prices
        cost = step_cost(step="", usage=usage, default_model=step["model"], prices=prices)
        step["input_tokens"] = (
            cost.input_tokens + cost.cache_read_tokens + cost.cache_creation_tokens
        )
        step["output_tokens"] = cost.output_tokens
        step["cost_usd"] = float(cost.cost_usd) if cost.cost_usd is not None else None


def _message_html(steps: list[dict], deadline: float, notes: list[str]) -> None:
    """Each message's markdown as clean HTML, in the process: a message too
    large to render inline stays plain text."""
    for step in steps:
        if time.monotonic() > deadline:
            notes.append("messages past the time budget are shown as plain text")
            return
        if step["text"] and step["role"] == "assistant":
            rendered = markdown_render_budgeted(step["text"], max_bytes=INLINE_RENDER_BYTES)
            step["html"] = "" if rendered.note else rendered.html


def _totals(steps: list[dict], cost_usd: float | None) -> dict:
    def total(key: str) -> int | None:
        values = [step[key] for step in steps if step[key] is not None]
        return sum(values) if values else None

    costs = [step["cost_usd"] for step in steps if step["cost_usd"] is not None]
    return {
        "steps": len(steps),
        "tool_calls": sum(len(step["tool_calls"]) for step in steps),
        "input_tokens": total("input_tokens"),
        "output_tokens": total("output_tokens"),
        "steps_cost_usd": round(sum(costs), 6) if costs else None,
        "cost_usd": cost_usd,
    }


def _calls_split(steps: list[dict], most: int) -> list[dict]:
    """Each step with more than `most` tool calls, continued in steps of `most`
    (marked `continued`, with no text or usage of their own), numbered again."""
    out: list[dict] = []
    for step in steps:
        calls = step["tool_calls"]
        if len(calls) <= most:
            out.append(step)
            continue
        out.append({**step, "tool_calls": calls[:most]})
        for start in range(most, len(calls), most):
            out.append(
                {
                    **step,
                    "text": "",
                    "html": "",
                    "tool_calls": calls[start : start + most],
                    "input_tokens": None,
                    "output_tokens": None,
                    "total_tokens": None,
                    "cost_usd": None,
                    "continued": True,
                }
            )
    for index, step in enumerate(out):
        step["index"] = index
    return out


# What the parsing child may take beyond the trace's own time: its start and the
# bytes' way there and back. Past it the child is killed and the trace is not read.
_CHILD_GRACE_SECONDS = 5.0


def trace_parse(
    read: Callable[[], bytes], *, reader: str, size: int, seconds: float | None = None
) -> dict:
    """The trace `read` returns (a local file's or a stored object's bytes, read
    once its size is known to be within bounds) as one step list (see the module's
    docstring for its bounds). `reader` comes from `trace_format_of`. The bytes are
    parsed in a child (`submissions.trace_worker`) under `TRACE_PARSE_MEMORY_BYTES`
    of memory: a trace made to balloon costs the child, never this process. Never
    raises for what the file holds: an unreadable trace has no steps and a `note`.

    Long because reading, bounding and parsing the bytes in a child process, with each failure's
    message, is one sequence."""
    limits = TraceLimits.from_settings(seconds)
    result: dict[str, Any] = {
        "version": TRACE_VERSION,
        "format": "",
        "format_label": "",
        "model": "",
        "agent": "",
        "steps": [],
        "ended": {},
        "totals": {},
        "truncated": False,
        "note": "",
        "number_sources": [],
    }
    if size > settings.TRACE_MAX_BYTES:
        result["note"] = (
            f"not read: the trace is {size / 2**20:.1f} MiB, more than the "
            f"{settings.TRACE_MAX_BYTES / 2**20:.0f} MiB the site reads"
        )
        result["truncated"] = True
        return result
    from .trace_worker import trace_read_budgeted

    try:
        parsed = child_run(
            trace_read_budgeted,
            read(),
            reader,
            limits,
            settings.TRACE_PARSE_MEMORY_BYTES,
            timeout=max(limits.seconds, 0) + _CHILD_GRACE_SECONDS,
        )
    except ChildTimeout:
        parsed = {"note": f"not read: reading the trace took longer than {limits.seconds:g} s"}
    except ChildFailed as exc:
        parsed = {"note": f"not read: {str(exc)[:200]}"}
    if "steps" not in parsed:
        result["note"] = parsed["note"]
        return result
    steps: list[dict] = parsed["steps"]
    notes: list[str] = parsed["notes"]
    _steps_price(steps)
    _message_html(steps, time.monotonic() + max(parsed["deadline_left"], 0), notes)
    result.update(
        format=parsed["format"],
        format_label=FORMAT_LABELS[parsed["format"]],
        model=parsed["model"],
        agent=parsed["agent"],
        totals=_totals(steps, parsed["cost_usd"]),  # the agent's own turns, before any is continued
        steps=_calls_split(steps, STEP_MAX_CALLS),
        ended=parsed["ended"],
        truncated=parsed["truncated"],
        note="; ".join(notes),
    )
    return result
