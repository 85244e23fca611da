"""A run's workspace on disk, the paths the coding loop's tools may touch, and
the trace file that records every step.

The workspace lives under MEDIA_ROOT (every worker of the site reaches it) in
`.agent-runs/<run id>/workspace/`, laid out as MLR-Bench's end-to-end runs are:
`task.md`, `idea.md`, `related_work.md`, `proposal.md`, `code/`, `run.sh`,
`results/log.txt`, `results/paper.md`, `<step>_token_usage.json` and the trace
`mlr-agent_output.json`.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings

from submissions.traces import MLR_AGENT_FORMAT, mlr_agent_trace_load

TRACE_NAME = "mlr-agent_output.json"
RUN_SCRIPT = "run.sh"
LOG_PATH = "results/log.txt"
PAPER_PATH = "results/paper.md"
# Files the site writes from its own records: the model may read them, not write them.
SITE_FILES = frozenset({RUN_SCRIPT, LOG_PATH, TRACE_NAME})


class PathRefused(Exception):
    """A tool path outside the workspace (absolute, `..`, through a symbolic link)."""


def run_folder(run_id: int) -> Path:
    return Path(settings.MEDIA_ROOT) / ".agent-runs" / str(run_id)


def workspace_of(run_id: int) -> Path:
    return run_folder(run_id) / "workspace"


def workspace_path(root: Path, relative: Any, *, allow_root: bool = False) -> Path:
    """The file a tool names, refused unless it stays inside `root` without
    passing through a symbolic link (the sandboxed code may have made one)."""
    if not isinstance(relative, str):
        raise PathRefused("the path must be a string")
    text = relative.strip()
    if "\x00" in text:
        raise PathRefused("the path contains a NUL character")
    if not text or text == ".":
        if allow_root:
            return root
        raise PathRefused("the path is empty; give a file path relative to the workspace")
    pure = PurePosixPath(text)
    if pure.is_absolute():
        raise PathRefused(
            f"{text}: absolute paths are refused; give a path relative to the workspace"
        )
    if ".." in pure.parts:
        raise PathRefused(f"{text}: '..' is refused; the path must stay inside the workspace")
    current = root
    for part in pure.parts:
        if part == ".":
            continue
        current = current / part
        if current.is_symlink():
            raise PathRefused(f"{text}: {part} is a symbolic link; links are not followed")
    return current


def regular_open(path: Path, *, write: bool = False) -> int:
    """A file descriptor on the regular file `path`, never through a link and
    never blocking: a FIFO, socket or device the sandboxed code made in the
    workspace is refused (opening a FIFO for writing would wait for a reader
    for ever, holding the worker)."""
    flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    flags |= (os.O_WRONLY | os.O_CREAT) if write else os.O_RDONLY
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise PathRefused(f"{path.name} is not a regular file (a pipe, socket or device?)")
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        # ELOOP: a link swapped in; ENXIO: a FIFO without a reader.
        raise PathRefused(
            f"{path.name} cannot be opened as a regular file ({exc.strerror})"
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathRefused(f"{path.name} is not a regular file (a pipe, socket or device?)")
    os.set_blocking(fd, True)
    if write:
        os.ftruncate(fd, 0)
    return fd


def regular_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(relative path, file) of every regular file under root, links never followed."""
    for current, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(current, d)))
        for name in sorted(files):
            path = Path(current) / name
            mode = path.lstat().st_mode
            if stat.S_ISREG(mode):
                yield path.relative_to(root).as_posix(), path


def files_copy(source: Path, target: Path) -> None:
    """Copy the regular files of `source` over `target` (links and devices left out)."""
    for relative, path in regular_files(source):
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        if destination.is_symlink():
            destination.unlink()
        shutil.copyfile(path, destination, follow_symlinks=False)


def text_write(path: Path, text: str) -> None:
    """Write atomically: a reader (the run page) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(temporary, path)


def json_write(path: Path, data: Any) -> None:
    text_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Trace:
    """The run's transcript (`mlr-agent_output.json`): every LLM call of every stage,
    with the tool calls, their results, tokens, cost and timing. Rewritten after
    each step, so the run page shows it as it grows."""

    def __init__(self, path: Path, *, model: str, agent: str):
        self.path = path
        self.data: dict[str, Any] = {
            "format": MLR_AGENT_FORMAT,
            "version": 1,
            "model": model,
            "agent": agent,
            "steps": [],
            "ended": None,
        }
        if path.is_file():
            try:
                loaded = mlr_agent_trace_load(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                loaded = None
            if loaded is not None:
                self.data["steps"] = loaded["steps"]
                self.data["ended"] = loaded.get("ended")

    def stage_restart(self, stage: str) -> None:
        """Drop what an interrupted attempt of `stage` recorded: it is run again."""
        self.data["steps"] = [s for s in self.data["steps"] if s.get("stage") != stage]
        self._renumber()
        self.save()

    def _renumber(self) -> None:
        for index, step in enumerate(self.data["steps"]):
            step["index"] = index

    def step(
        self,
        *,
        stage: str,
        started_at: str,
        duration_s: float,
        message: dict[str, Any],
        tool_results: list[dict[str, Any]],
        usage: dict[str, Any],
        cost_usd: float | None,
    ) -> None:
        self.data["steps"].append(
            {
                "index": len(self.data["steps"]),
                "stage": stage,
                "started_at": started_at,
                "duration_s": round(duration_s, 3),
                "message": message,
                "tool_results": tool_results,
                "usage": usage,
                "cost_usd": cost_usd,
            }
        )
        self.save()

    def end(self, *, reason: str, summary: str) -> None:
        self.data["ended"] = {"reason": reason, "summary": summary}
        self.save()

    def save(self) -> None:
        json_write(self.path, self.data)
