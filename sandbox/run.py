"""One run, start to end: preflight, cgroup and work disk, the launch, the log
pump, the watchdog, the teardown, and which limit (if any) the run ran into."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandbox.bwrap import launcher, path_reachable_problem, sandbox_env, sandbox_problem, write_etc
from sandbox.cgroups import Cgroup
from sandbox.processes import Watch, kill_pids, sandbox_procs, uid_sweep
from sandbox.spec import (
    INSIDE_WORKDIR,
    Limit,
    LogSink,
    Mount,
    Outcome,
    SandboxError,
    SandboxResult,
    SandboxSpec,
)
from sandbox.workdisk import WorkDisk, WorkDiskUnavailable, bytes_under, largest_file

logger = logging.getLogger(__name__)


_MEMORY_ERRORS = re.compile(
    rb"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory", re.IGNORECASE
)


class _LogPump(threading.Thread):
    """Copy the sandbox's output to the log as it comes, up to a size cap."""

    def __init__(self, fd: int, log: LogSink, max_bytes: int):
        super().__init__(daemon=True)
        self.fd, self.log, self.max_bytes = fd, log, max_bytes
        self.written = 0
        self.tail = b""

    def run(self) -> None:
        truncated = False
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.tail = (self.tail + chunk)[-4096:]
            if truncated:
                continue
            room = self.max_bytes - self.written
            if len(chunk) > room:
                chunk = chunk[:room]
                truncated = True
            self.log.write(chunk)
            if truncated:
                self.log.write(f"\n[log truncated at {self.max_bytes} bytes]\n".encode())
            self.log.flush()
            self.written += len(chunk)


def sandbox_run(
    spec: SandboxSpec,
    *,
    log: LogSink,
    should_cancel: Callable[[], bool] | None = None,
    log_max_bytes: int = 10 * 1024 * 1024,
    env_passthrough: dict[str, str] | None = None,
    poll_seconds: float = 0.2,
    cancel_poll_seconds: float = 1.0,
) -> SandboxResult:
    """Run `spec.command` in the sandbox until it ends or a limit ends it."""
    _preflight(spec)
    name = f"mlrbench-{os.getpid()}-{time.monotonic_ns()}"
    cgroup = Cgroup.create(name, spec.limits, spec.cgroups)
    enforcement = f"cgroup {cgroup.mode}" if cgroup else "RLIMIT_DATA + RSS watchdog"
    etc_dir = write_etc(spec.scratch) if spec.scratch else None
    disk = WorkDisk(spec.workdir, spec.limits.disk_bytes) if WorkDisk.available() else None
    if disk is not None:
        try:
            disk.mount()
        except WorkDiskUnavailable as exc:
            logger.warning("no work disk, the disk limit falls back to the watchdog: %s", exc)
            disk = None
        except SandboxError:
            if cgroup:
                cgroup.remove()
            raise
    try:
        return _sandbox_run_on(
            spec,
            cgroup,
            etc_dir,
            disk,
            enforcement,
            log=log,
            options=(
                should_cancel,
                log_max_bytes,
                env_passthrough,
                poll_seconds,
                cancel_poll_seconds,
            ),
        )
    finally:
        if disk is not None:
            disk.copy_back()
            disk.unmount()


def _sandbox_run_on(
    spec: SandboxSpec,
    cgroup: Cgroup | None,
    etc_dir: Path | None,
    disk: WorkDisk | None,
    enforcement: str,
    *,
    log: LogSink,
    options: tuple[Callable[[], bool] | None, int, dict[str, str] | None, float, float],
) -> SandboxResult:
    """Long because starting, watching and cleaning up the process share its pipe and cgroup."""
    should_cancel, log_max_bytes, env_passthrough, poll_seconds, cancel_poll_seconds = options
    command = launcher(spec, cgroup, etc_dir, disk)

    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            env=sandbox_env(spec, env_passthrough),
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        if cgroup:
            cgroup.remove()
        raise SandboxError(f"could not start the sandbox: {exc}") from exc
    os.close(write_fd)
    pump = _LogPump(read_fd, log, log_max_bytes)
    pump.start()

    watch = Watch(spec=spec, process=process, cgroup=cgroup, started=started, disk=disk)
    try:
        stop = watch.until_stopped(
            should_cancel=should_cancel,
            poll_seconds=poll_seconds,
            cancel_poll_seconds=cancel_poll_seconds,
        )
    finally:
        ended = _teardown(process, cgroup, spec.uid, pump, read_fd)
    wall = ended.finished - started

    exit_code = process.returncode
    peak = ended.cgroup_peak if ended.cgroup_peak is not None else (watch.peak_rss or None)
    limit, reason, outcome = stop.limit, stop.reason, stop.outcome
    if not limit and outcome is None:
        limit, reason = _limit_after_exit(
            spec,
            disk=disk,
            memory_cgroup=ended.memory_cgroup,
            oom_kills=ended.oom_kills,
            pids_refused=ended.pids_refused,
            exit_code=exit_code,
            tail=pump.tail,
        )
    if outcome is None:
        outcome = Outcome.SUCCEEDED if exit_code == 0 else Outcome.FAILED
    if outcome == Outcome.FAILED and not reason:
        reason = _exit_reason(exit_code)
    return SandboxResult(
        outcome=outcome,
        exit_code=exit_code,
        limit=limit,
        reason=reason,
        wall_seconds=wall,
        peak_memory_bytes=peak,
        memory_enforcement=enforcement,
        leftovers_killed=ended.leftovers,
    )


def _preflight(spec: SandboxSpec) -> None:
    """Refuse a run the sandbox cannot hold, before anything starts."""
    problem = sandbox_problem()
    if problem:
        raise SandboxError(problem)
    for mount in [Mount(spec.workdir, INSIDE_WORKDIR), *spec.mounts]:
        unreachable = path_reachable_problem(mount.source, spec.uid)
        if unreachable:
            raise SandboxError(unreachable)
    if spec.uid is not None:
        uid_sweep(spec.uid)  # a slot's uid starts with nothing running


@dataclass(frozen=True)
class _Ended:
    """What the teardown found once the run was over."""

    finished: float
    leftovers: int
    memory_cgroup: bool
    cgroup_peak: int | None
    oom_kills: int
    pids_refused: int


def _teardown(
    process: subprocess.Popen[bytes],
    cgroup: Cgroup | None,
    uid: int | None,
    pump: _LogPump,
    read_fd: int,
) -> _Ended:
    """Kill what is left of a run, drain its log and read the cgroup's counters."""
    if process.poll() is None:
        _kill_run(process, cgroup, uid)
    process.wait()
    finished = time.monotonic()
    pump.join(timeout=10)
    if pump.is_alive():
        # Something still holds the pipe: only a leftover of this run can.
        kill_pids(proc.pid for proc in sandbox_procs(process.pid, cgroup, uid))
        pump.join(timeout=10)
    with contextlib.suppress(OSError):
        os.close(read_fd)
    # The pid namespace died with bwrap's init; these sweeps only make sure.
    # (Pids seen earlier are not killed blindly: by now they may be reused.)
    leftovers = 0
    if cgroup is not None:
        leftovers += len(cgroup.pids())
        cgroup.kill()
    if uid is not None:
        leftovers += uid_sweep(uid)
    memory_cgroup = cgroup is not None and cgroup.has_memory
    ended = _Ended(
        finished=finished,
        leftovers=leftovers,
        memory_cgroup=memory_cgroup,
        cgroup_peak=cgroup.memory_peak() if cgroup is not None and memory_cgroup else None,
        oom_kills=cgroup.oom_kills() if cgroup is not None and memory_cgroup else 0,
        pids_refused=cgroup.pids_refusals() if cgroup is not None else 0,
    )
    if cgroup is not None:
        cgroup.remove()
    return ended


def _kill_run(process: subprocess.Popen[bytes], cgroup: Cgroup | None, uid: int | None) -> None:
    # Kill what runs now (taken before the kill, since the tree falls apart
    # after): the outer bwrap's group, whose init then dies (die-with-parent)
    # and takes the pid namespace with it; the rest are belts and braces.
    running = [proc.pid for proc in sandbox_procs(process.pid, cgroup, uid)]
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if cgroup is not None:
        cgroup.kill()
    kill_pids(running)


def _limit_after_exit(
    spec: SandboxSpec,
    *,
    disk: WorkDisk | None,
    memory_cgroup: bool,
    oom_kills: int,
    pids_refused: int,
    exit_code: int | None,
    tail: bytes,
) -> tuple[str, str]:
    """Attribute a run that ended by itself to the limit it ran into, if any."""
    limits = spec.limits
    if oom_kills:
        return Limit.MEMORY, (
            f"a process was killed at the memory limit of {limits.memory_bytes} bytes"
        )
    if disk is not None and disk.full():
        # The kernel refused a write at the limit, whatever the code made of it.
        return Limit.DISK, f"writes were refused at the limit of {limits.disk_bytes} bytes"
    if exit_code == 0:
        return Limit.NONE, ""
    if disk is None and (
        largest_file(spec.workdir) >= limits.disk_bytes
        or bytes_under(spec.workdir) >= limits.disk_bytes
    ):
        return Limit.DISK, f"stopped at the limit of {limits.disk_bytes} bytes written"
    if pids_refused:
        return Limit.PROCESSES, f"new processes were refused at the limit of {limits.processes}"
    # Without a memory cgroup, RLIMIT_DATA refuses the allocation that crosses
    # the limit before the watchdog sees it; the program's last words say so.
    if not memory_cgroup and _MEMORY_ERRORS.search(tail):
        return Limit.MEMORY, (
            f"an allocation was refused at the memory limit of {limits.memory_bytes} bytes"
        )
    return Limit.NONE, ""


def _exit_reason(exit_code: int | None) -> str:
    if exit_code is None:
        return "the run ended without an exit status"
    if exit_code < 0 or exit_code > 128:
        number = -exit_code if exit_code < 0 else exit_code - 128
        with contextlib.suppress(ValueError):
            return f"killed by signal {signal.Signals(number).name}"
    return f"exited with status {exit_code}"
