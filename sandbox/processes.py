"""The run's processes, read from /proc: finding them, killing them, sweeping
a slot's uid, and the watchdog that polls them for the limits the kernel does
not hold by itself here."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from sandbox.cgroups import Cgroup
from sandbox.spec import Limit, Outcome, SandboxSpec
from sandbox.workdisk import WorkDisk, bytes_under


@dataclass
class Proc:
    pid: int
    ppid: int
    uid: int
    threads: int
    rss_bytes: int


_PAGE = os.sysconf("SC_PAGE_SIZE")


def _read_proc(pid: int) -> Proc | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
        uid = os.stat(f"/proc/{pid}").st_uid
    except (OSError, ValueError):
        return None
    rest = raw[raw.rfind(")") + 2 :].split()
    if rest[0] in ("Z", "X"):
        # A zombie holds no resources; an init whose parent left may linger as one.
        return None
    # Fields after the command: state ppid ... num_threads (20th) ... rss (24th).
    return Proc(
        pid=pid, ppid=int(rest[1]), uid=uid, threads=int(rest[17]), rss_bytes=int(rest[21]) * _PAGE
    )


def all_procs() -> list[Proc]:
    procs = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            proc = _read_proc(int(entry))
            if proc is not None:
                procs.append(proc)
    return procs


def _tree(root: int, procs: Iterable[Proc]) -> list[Proc]:
    by_parent: dict[int, list[Proc]] = {}
    by_pid = {}
    for proc in procs:
        by_parent.setdefault(proc.ppid, []).append(proc)
        by_pid[proc.pid] = proc
    found = [by_pid[root]] if root in by_pid else []
    stack = [root]
    while stack:
        for child in by_parent.get(stack.pop(), []):
            found.append(child)
            stack.append(child.pid)
    return found


def sandbox_procs(root: int, cgroup: Cgroup | None, uid: int | None) -> list[Proc]:
    """The run's processes, found the cheapest way the host allows."""
    if cgroup is not None:
        members = (_read_proc(pid) for pid in cgroup.pids() | {root})
        return [proc for proc in members if proc is not None]
    if uid is not None:
        procs: list[Proc] = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if os.stat(f"/proc/{entry}").st_uid != uid and int(entry) != root:
                        continue
                    proc = _read_proc(int(entry))
                    if proc is not None:
                        procs.append(proc)
        return procs
    return _tree(root, all_procs())


def kill_pids(pids: Iterable[int]) -> int:
    killed = 0
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            pass
    return killed


def processes_of_uid(uid: int) -> list[int]:
    """Every process whose owner is `uid` (a slot's uid belongs to one run at a time)."""
    return [proc.pid for proc in all_procs() if proc.uid == uid]


def uid_sweep(uid: int) -> int:
    """Kill every process of a slot's uid; returns how many there were."""
    killed = 0
    for _ in range(20):
        pids = processes_of_uid(uid)
        if not pids:
            break
        killed += kill_pids(pids)
        time.sleep(0.05)
    return killed


@dataclass(frozen=True)
class Stop:
    """Why the watchdog stopped a run early (all empty: it ended by itself)."""

    limit: str = Limit.NONE
    reason: str = ""
    outcome: str | None = None


@dataclass
class Watch:
    """The watchdog: polls a running sandbox for the limits the kernel does not
    enforce by itself here (wall time, cancel, process count, memory without
    a memory cgroup, bytes written)."""

    spec: SandboxSpec
    process: subprocess.Popen[bytes]
    cgroup: Cgroup | None
    started: float
    disk: WorkDisk | None = None
    peak_rss: int = 0

    def until_stopped(
        self,
        *,
        should_cancel: Callable[[], bool] | None,
        poll_seconds: float,
        cancel_poll_seconds: float,
    ) -> Stop:
        next_cancel = next_disk = 0.0
        while self.process.poll() is None:
            now = time.monotonic()
            if now - self.started > self.spec.limits.wall_seconds:
                return Stop(
                    Limit.WALL_TIME,
                    f"killed after the wall-time limit of {self.spec.limits.wall_seconds:g} s",
                    Outcome.TIMED_OUT,
                )
            if should_cancel is not None and now >= next_cancel:
                next_cancel = now + cancel_poll_seconds
                if should_cancel():
                    return Stop(Limit.NONE, "cancelled by an organiser", Outcome.CANCELLED)
            stop = self._resources_exceeded(check_disk=now >= next_disk)
            if now >= next_disk:
                next_disk = now + 0.5
            if stop is not None:
                return stop
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=poll_seconds)
        return Stop()

    def _resources_exceeded(self, *, check_disk: bool) -> Stop | None:
        limits = self.spec.limits
        tree = sandbox_procs(self.process.pid, self.cgroup, self.spec.uid)
        rss = sum(proc.rss_bytes for proc in tree)
        self.peak_rss = max(self.peak_rss, rss)
        if sum(proc.threads for proc in tree) >= limits.processes:
            return Stop(
                Limit.PROCESSES, f"killed at the limit of {limits.processes} processes and threads"
            )
        if (self.cgroup is None or not self.cgroup.has_memory) and rss >= limits.memory_bytes:
            return Stop(
                Limit.MEMORY, f"killed at the memory limit of {limits.memory_bytes} bytes (RSS)"
            )
        # With the work disk the kernel refuses writes at the limit; the run may go on.
        if check_disk and self.disk is None and bytes_under(self.spec.workdir) >= limits.disk_bytes:
            return Stop(Limit.DISK, f"killed after writing {limits.disk_bytes} bytes")
        return None
