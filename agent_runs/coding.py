"""The experiment stage: a coding loop over the OpenAI tool-calling protocol.

The model works in a copy of the workspace with five tools, `write_file {path,
content}`, `read_file {path}`, `list_files {path}`, `run {command}` (in the
`sandbox` package's bubblewrap sandbox: no network, the run's time, memory and
disk limits) and `finish {summary}`. A bad call (invalid JSON, a missing
argument, an unknown tool, a path outside the workspace) is an error result the
model sees, never a crash. Every command `run` executed goes to `run.sh`, in
order, and its output to `results/log.txt`; both are written from the site's
own record, whatever the code did to the files.

When the loop ends, every file the model wrote or its commands made is kept,
wherever in the workspace it is (`main.py` at the top as well as `code/`), so
that `run.sh` replays in the stored folder exactly as it ran: all but the
site's own files (run.sh, the log, the trace, the token usage, the earlier
stages' documents), within the run's intake limits; a file the intake would
refuse (over the limits, a nested archive, an image that is not one) is left
out and named in the stage's note.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from django.conf import settings

import sandbox
from common import llm as gateway
from experiments.slots import Slots, slots_acquire
from submissions.archives import IntakeLimits, folder_unpack

from .context import BudgetSpent, StageContext, StageFailed
from .workspace import (
    LOG_PATH,
    RUN_SCRIPT,
    SITE_FILES,
    PathRefused,
    files_copy,
    now_iso,
    regular_files,
    regular_open,
    text_write,
    workspace_path,
)

READ_MAX_BYTES = 64 * 1024
WRITE_MAX_BYTES = 1024 * 1024
LIST_MAX = 300
OUTPUT_TAIL_CHARS = 4000


def _function(name: str, description: str, properties: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    key: {"type": "string", "description": text} for key, text in properties.items()
                },
                "required": list(properties),
            },
        },
    }


TOOLS = [
    _function(
        "write_file",
        "Write a text file in the workspace (code goes under code/).",
        {"path": "path relative to the workspace", "content": "the whole file"},
    ),
    _function(
        "read_file",
        "Read a text file of the workspace.",
        {"path": "path relative to the workspace"},
    ),
    _function(
        "list_files",
        "List the files under a folder of the workspace.",
        {"path": "folder ('.' for the top)"},
    ),
    _function(
        "run",
        "Run a shell command in the workspace, in a sandbox without network; returns the "
        "exit code and the end of its output. Every command is kept in run.sh.",
        {"command": "the shell command, run from the workspace's top folder"},
    ),
    _function("finish", "End the experiment.", {"summary": "what was done and found"}),
]

INSTRUCTIONS = (
    "Implement and run the experiment of the proposal with the tools. Write the code under "
    "code/, run it with `run` (python and python3 are available; no network, so use synthetic "
    "or generated data), save result tables and figures under results/, and call `finish` "
    "with a summary. Report only what the runs printed."
)
NUDGE = "Answer with a tool call (write_file, read_file, list_files, run or finish)."


@dataclass
class ToolOutcome:
    content: str
    finished: bool = False
    summary: str = ""


@dataclass
class LoopEnd:
    reason: str  # finish | max_steps | max_tokens | max_cost
    summary: str


@dataclass
class Commands:
    """What `run` did, in order: the commands (run.sh) and their output (the log)."""

    folder: Path
    run_dir: Path
    slots: Slots
    executed: list[str] = field(default_factory=list)
    log: bytearray = field(default_factory=bytearray)
    should_cancel: Callable[[], bool] | None = None
    succeeded: int = 0  # commands that exited 0

    def run(self, command: str) -> ToolOutcome:
        self.executed.append(command)
        output_path = self.run_dir / f"command-{len(self.executed)}.log"
        uid = self.slots.uid if os.geteuid() == 0 else None
        spec = sandbox.SandboxSpec(
            command=command,
            workdir=self.folder,
            limits=sandbox.Limits(
                wall_seconds=settings.AGENT_RUN_COMMAND_SECONDS,
                memory_bytes=settings.SANDBOX_MEMORY_BYTES,
                processes=settings.SANDBOX_PROCESSES,
                disk_bytes=settings.SANDBOX_DISK_BYTES,
            ),
            mounts=[sandbox.Mount(Path(p), p) for p in settings.SANDBOX_RO_PATHS if p],
            gpus=self.slots.gpus,
            uid=uid,
            cgroups=settings.SANDBOX_CGROUPS,
            scratch=self.run_dir,
        )
        with open(output_path, "wb") as log:
            result = sandbox.sandbox_run(
                spec,
                log=log,
                should_cancel=self.should_cancel,
                log_max_bytes=settings.EXPERIMENT_LOG_MAX_BYTES,
            )
        output = output_path.read_bytes()
        self.log += f"$ {command}\n".encode() + output
        if output and not output.endswith(b"\n"):
            self.log += b"\n"
        self.succeeded += result.outcome == sandbox.Outcome.SUCCEEDED
        status = f"exit code: {result.exit_code}"
        if result.outcome != sandbox.Outcome.SUCCEEDED:
            status += f" ({result.outcome}{': ' + result.reason if result.reason else ''})"
        self.log += f"[{status}]\n".encode()
        tail = output.decode(errors="replace")[-OUTPUT_TAIL_CHARS:]
        return ToolOutcome(
            f"{status}\nstdout and stderr (the last {OUTPUT_TAIL_CHARS} characters):\n{tail}"
        )


def _arguments(call: gateway.ToolCall, names: tuple[str, ...]) -> dict[str, Any]:
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError as exc:
        raise ValueError(f"the arguments of {call.name} are not valid JSON ({exc})") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"the arguments of {call.name} must be a JSON object")
    missing = [name for name in names if not isinstance(arguments.get(name), str)]
    if missing:
        raise ValueError(f"{call.name} needs the string argument(s) {', '.join(missing)}")
    return arguments


def _write_file(work: Path, arguments: dict[str, Any], uid: int | None) -> ToolOutcome:
    path = workspace_path(work, arguments["path"])
    relative = path.relative_to(work).as_posix()
    if relative in SITE_FILES:
        raise PathRefused(f"{relative} is written by the site from its own record")
    content = arguments["content"].encode()
    if len(content) > WRITE_MAX_BYTES:
        raise ValueError(f"the content is larger than {WRITE_MAX_BYTES} bytes")
    if path.is_dir():
        raise PathRefused(f"{relative} is a folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    with os.fdopen(regular_open(path, write=True), "wb") as handle:
        handle.write(content)
    if uid is not None:  # the sandboxed code may rewrite what the model wrote
        for folder in [path, *path.relative_to(work).parents]:
            target = work / folder if folder != path else path
            os.chown(target, uid, uid, follow_symlinks=False)
    return ToolOutcome(f"wrote {relative} ({len(content)} bytes)")


def _read_file(work: Path, arguments: dict[str, Any]) -> ToolOutcome:
    path = workspace_path(work, arguments["path"])
    if not path.exists() and not path.is_symlink():
        raise PathRefused(f"{arguments['path']}: no such file")
    with os.fdopen(regular_open(path), "rb") as handle:
        data = handle.read(READ_MAX_BYTES + 1)
    note = f"\n[cut at {READ_MAX_BYTES} bytes]" if len(data) > READ_MAX_BYTES else ""
    return ToolOutcome(data[:READ_MAX_BYTES].decode(errors="replace") + note)


def _list_files(work: Path, arguments: dict[str, Any]) -> ToolOutcome:
    folder = workspace_path(work, arguments["path"], allow_root=True)
    if not folder.is_dir():
        raise PathRefused(f"{arguments['path']}: no such folder")
    lines: list[str] = []
    for relative, path in regular_files(folder):
        if len(lines) == LIST_MAX:
            lines.append(f"... (more than {LIST_MAX} files)")
            break
        lines.append(f"{relative} ({path.stat().st_size} bytes)")
    return ToolOutcome("\n".join(lines) or "(no files)")


def tool_execute(call: gateway.ToolCall, *, work: Path, commands: Commands) -> ToolOutcome:
    """One tool call; any problem with it is an error result for the model."""
    uid = commands.slots.uid if os.geteuid() == 0 else None
    try:
        if call.name == "write_file":
            return _write_file(work, _arguments(call, ("path", "content")), uid)
        if call.name == "read_file":
            return _read_file(work, _arguments(call, ("path",)))
        if call.name == "list_files":
            return _list_files(work, _arguments(call, ("path",)))
        if call.name == "run":
            return commands.run(_arguments(call, ("command",))["command"])
        if call.name == "finish":
            summary = _arguments(call, ("summary",))["summary"]
            return ToolOutcome("finished", finished=True, summary=summary)
    except (PathRefused, ValueError) as exc:
        return ToolOutcome(f"error: {exc}")
    except OSError as exc:
        return ToolOutcome(f"error: {exc.strerror or exc}")
    names = ", ".join(tool["function"]["name"] for tool in TOOLS)
    return ToolOutcome(f"error: unknown tool {call.name!r}; the tools are {names}")


def _opening(context: StageContext) -> list[dict[str, Any]]:
    from .stages import SYSTEM, read

    documents = "".join(
        f"## {name}\n\n{read(context.workspace, name).strip()}\n\n"
        for name in ("task.md", "idea.md", "related_work.md", "proposal.md")
        if read(context.workspace, name).strip()
    )
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": documents + INSTRUCTIONS},
    ]


def coding_loop(context: StageContext, work: Path, commands: Commands) -> LoopEnd:
    messages = _opening(context)
    nudges = 0
    for _ in range(context.run.max_steps):
        try:
            started_at, started = now_iso(), time.monotonic()
            response = context.call(model=context.run.coding_model, messages=messages, tools=TOOLS)
        except BudgetSpent as exc:
            return LoopEnd(exc.reason, str(exc))
        messages.append(response.assistant_message())
        if not response.tool_calls:
            context.record(response, started_at=started_at, duration_s=time.monotonic() - started)
            nudges += 1
            if nudges > settings.AGENT_RUN_MAX_NUDGES:
                raise StageFailed(
                    f"the model answered {nudges} times without a tool call "
                    f"(told to use one {settings.AGENT_RUN_MAX_NUDGES} times)"
                )
            messages.append({"role": "user", "content": NUDGE})
            continue
        results, end = [], None
        for call in response.tool_calls:
            outcome = tool_execute(call, work=work, commands=commands)
            results.append({"tool_call_id": call.id, "name": call.name, "content": outcome.content})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": outcome.content})
            if outcome.finished:
                end = LoopEnd("finish", outcome.summary)
                break
        context.record(
            response,
            started_at=started_at,
            duration_s=time.monotonic() - started,
            tool_results=results,
        )
        if end is not None:
            return end
        context.cancel_check()
    return LoopEnd("max_steps", f"the step budget ({context.run.max_steps}) is spent")


def experiment_stage(context: StageContext) -> str:
    """The loop in a fresh copy of the workspace under the work root (the sandbox
    user can enter it), copied back only when the stage ends."""
    root = Path(settings.EXPERIMENT_WORK_ROOT)
    run_dir = root / "agent-runs" / f"{context.run.pk}-{secrets.token_hex(4)}"
    for folder in (root, root / "agent-runs"):
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o755)
    work = run_dir / "work"
    work.mkdir(parents=True)
    os.chmod(run_dir, 0o755)
    try:
        files_copy(context.workspace, work)
        for site_file in SITE_FILES:
            (work / site_file).unlink(missing_ok=True)
        (work / "code").mkdir(exist_ok=True)
        (work / "results").mkdir(exist_ok=True)
        with slots_acquire(gpus=0, wait_seconds=30) as slots:
            if os.geteuid() == 0:
                for current, dirs, files in os.walk(work):
                    for name in [".", *dirs, *files]:
                        os.chown(
                            os.path.join(current, name), slots.uid, slots.uid, follow_symlinks=False
                        )
            commands = Commands(folder=work, run_dir=run_dir, slots=slots)
            commands.should_cancel = _cancel_poll(context)
            end = coding_loop(context, work, commands)
        context.trace.end(reason=end.reason, summary=end.summary)
        if commands.executed and not commands.succeeded:
            # Not a finished experiment: nothing it ran worked, so no result can be
            # reported (the paper stage would write one up from failures).
            raise StageFailed(
                f"every command the experiment ran failed ({len(commands.executed)} of "
                f"{len(commands.executed)}; the last: {commands.executed[-1][:200]})"
            )
        left_out = _results_keep(context.workspace, work, commands, run_dir / "kept")
        note = f"ended by {end.reason}: {end.summary}"
        if left_out:
            note += f"; {len(left_out)} file(s) not kept: " + "; ".join(left_out[:10])
        return note
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _cancel_poll(context: StageContext) -> Callable[[], bool]:
    from .models import AgentRun

    def should_cancel() -> bool:
        return AgentRun.objects.filter(pk=context.run.pk, cancel_requested=True).exists()

    return should_cancel


# What the earlier stages wrote from the site's records: the loop may read them,
# what it does to them stays in its copy.
_STAGE_DOCUMENTS = frozenset({"task.md", "idea.md", "related_work.md", "proposal.md"})
# Room left in the intake's limits for what the site adds after the loop (run.sh,
# the log, the paper, its token usage, the trace).
_RESERVED_ENTRIES = 16
_RESERVED_BYTES = 16 * 1024 * 1024


def _site_owned(relative: str) -> bool:
    name = relative.rsplit("/", 1)[-1]
    top_level = "/" not in relative
    return (
        relative in SITE_FILES
        or relative in _STAGE_DOCUMENTS
        or (top_level and name.endswith("_token_usage.json"))
        or name.startswith(".")  # the store leaves hidden files out of the archive
    )


def _kept_files(work: Path, budget: IntakeLimits, problems: list[str]) -> list[tuple[Path, str]]:
    """The loop's files, in path order, while they fit the run's limits."""
    chosen: list[tuple[Path, str]] = []
    total = 0
    for relative, path in regular_files(work):
        if _site_owned(relative):
            continue
        size = path.stat().st_size
        if len(chosen) >= budget.max_entries:
            problems.append(f"{relative}: over the run's {budget.max_entries} files")
        elif total + size > budget.max_unpacked_bytes:
            problems.append(f"{relative} ({size} bytes): over the run's size limit")
        else:
            chosen.append((path, relative))
            total += size
    return chosen


def _results_keep(workspace: Path, work: Path, commands: Commands, staging: Path) -> list[str]:
    """Every file of the loop's folder back into the workspace (see the module
    docstring), checked as the intake will check them; returns what was left out."""
    limits = IntakeLimits.from_settings()
    existing = list(regular_files(workspace))
    reserved_bytes = _RESERVED_BYTES + len(commands.log)
    reserved_bytes += sum(p.stat().st_size for r, p in existing if _site_owned(r))
    budget = replace(
        limits,
        max_entries=max(limits.max_entries - _RESERVED_ENTRIES - len(existing), 0),
        max_unpacked_bytes=max(
            min(limits.max_unpacked_bytes, limits.max_archive_bytes) - reserved_bytes, 0
        ),
    )
    problems: list[str] = []
    chosen = _kept_files(work, budget, problems)
    staging.mkdir(parents=True, exist_ok=True)
    # The intake's own checks (names, nested archives, images that are not), file by file.
    checked = folder_unpack(files=chosen, dest=staging, limits=limits, on_problem=problems.append)
    for item in checked:
        target = workspace / item.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        shutil.copyfile(staging / item.path, target, follow_symlinks=False)
    script = "#!/bin/sh\n# Every command the agent ran, in order (MLR-Agent on the site).\n"
    text_write(workspace / RUN_SCRIPT, script + "".join(f"{c}\n" for c in commands.executed))
    text_write(workspace / LOG_PATH, commands.log.decode(errors="replace"))
    return problems
