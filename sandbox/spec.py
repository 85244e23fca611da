"""What a sandbox run is asked (`SandboxSpec`, `Limits`, `Mount`) and what it
answers (`SandboxResult`, `Outcome`, `Limit`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


class LogSink(Protocol):
    """Where a run's output goes: a local file, or the stored log (`StoredLog`)."""

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...


# The uid and gid the code sees inside the sandbox (mapped to the slot's uid outside).
INSIDE_UID = 1000
INSIDE_GID = 1000
INSIDE_WORKDIR = "/work"
# A `python` for hosts that have only `python3` (Debian without python-is-python3):
# code and run.sh files written for `python main.py` then run rather than exit 127.
# Last on the PATH, so a host's or an environment's own `python` comes first.
PYTHON_FALLBACK_DIR = "/opt/sandbox/bin"
HOST_PATH = "/usr/local/bin:/usr/bin:/bin"
SANDBOX_PATH = f"{HOST_PATH}:{PYTHON_FALLBACK_DIR}"


class SandboxError(Exception):
    """The sandbox cannot start at all (missing tool, unreachable folder)."""


class Outcome:
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


class Limit:
    """Which limit ended or marked a run ("" when none did)."""

    NONE = ""
    WALL_TIME = "wall_time"
    MEMORY = "memory"
    PROCESSES = "processes"
    DISK = "disk"


@dataclass(frozen=True)
class Limits:
    wall_seconds: float
    memory_bytes: int
    processes: int  # processes and threads together, bwrap's own two included
    disk_bytes: int  # bytes written under /work, and the size of each file


@dataclass(frozen=True)
class Mount:
    source: Path
    target: str
    writable: bool = False


@dataclass
class SandboxSpec:
    command: str
    workdir: Path  # host folder, fresh for this run; mounted read-write at /work
    limits: Limits
    mounts: list[Mount] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # added to the allow-listed base
    gpus: list[int] = field(default_factory=list)
    # Outside uid of the slot; None runs as the worker's own user (no root here).
    uid: int | None = None
    cwd: str = INSIDE_WORKDIR
    cgroups: str = "auto"  # auto | v2 | v1 | off
    # Where the per-run passwd/group files go (not visible as a writable folder inside).
    scratch: Path | None = None
    # Files under the work folder (relative paths) mounted read-only over /work:
    # the run cannot change them, whatever it runs.
    read_only: list[str] = field(default_factory=list)


@dataclass
class SandboxResult:
    outcome: str
    exit_code: int | None
    limit: str
    reason: str
    wall_seconds: float
    peak_memory_bytes: int | None
    memory_enforcement: str
    leftovers_killed: int = 0
