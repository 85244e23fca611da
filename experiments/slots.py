"""GPU and job slots on a worker host, shared by all its worker processes.

A slot is a lock file held with `flock` for as long as the job runs: the
kernel releases it when the process dies, so a crashed worker never leaks a
GPU. Each job also takes a job slot, whose number gives it its own sandbox
uid (`SANDBOX_UID_BASE + slot`). The lock of a job slot guards that uid, so
it lives in one folder for the whole host (`SANDBOX_UID_LOCK_DIR`) and is
named after the uid: two workers (or a worker and a test suite) with
different work roots never run, nor sweep, the same uid at once. GPU locks
live under `EXPERIMENT_WORK_ROOT/slots/`.

Hosts announce their GPU count in Redis (`gpu_host_announce`, on worker
start and before each job) so that the site can refuse, when a run is
queued, a job asking for more GPUs than any host has.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from django.conf import settings

from common.polling import poll_until

ANNOUNCE_KEY = "mlrbench:gpu-hosts"
ANNOUNCE_TTL_SECONDS = 24 * 3600


class SlotsBusy(Exception):
    """Every slot this job needs is held by other jobs on this host right now."""


class HostTooSmall(Exception):
    """This host has fewer GPUs than the job asks for."""


def host_name() -> str:
    return socket.gethostname()


@lru_cache(maxsize=1)
def _nvidia_smi_count() -> int:
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        listing = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in listing.splitlines() if line.startswith("GPU "))


def host_gpu_count() -> int:
    """GPUs on this host: `GPU_COUNT` when set, else what `nvidia-smi -L` lists (0 without it)."""
    if settings.GPU_COUNT is not None:
        return settings.GPU_COUNT
    return _nvidia_smi_count()


def _redis():
    import redis

    # REDIS_URL when the broker is RabbitMQ; the broker when it is Redis itself.
    url = settings.REDIS_URL or settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    return redis.Redis.from_url(url, socket_timeout=5)


def gpu_host_announce() -> int:
    """Tell the site how many GPUs this host has; returns the count."""
    count = host_gpu_count()
    client = _redis()
    if client is not None:
        now = time.time()
        with contextlib.suppress(Exception):
            client.hset(ANNOUNCE_KEY, host_name(), f"{count}:{now:.0f}")
    return count


def gpu_hosts() -> dict[str, int]:
    """Hosts that announced themselves within the last day, with their GPU counts."""
    client = _redis()
    if client is None:
        return {}
    hosts = {}
    now = time.time()
    try:
        entries = client.hgetall(ANNOUNCE_KEY)
    except Exception:
        return {}
    for host, value in entries.items():
        count, _, seen = value.decode().partition(":")
        if now - float(seen or 0) <= ANNOUNCE_TTL_SECONDS:
            hosts[host.decode()] = int(count)
    return hosts


def gpu_capacity() -> int | None:
    """The most GPUs one host offers, or None when nothing is known.

    `GPU_MAX_PER_HOST` wins when set; else the hosts' announcements; without a
    broker the site runs jobs itself, so this host's own count.
    """
    if settings.GPU_MAX_PER_HOST is not None:
        return settings.GPU_MAX_PER_HOST
    if not settings.CELERY_BROKER_URL:
        return host_gpu_count()
    hosts = gpu_hosts()
    return max(hosts.values()) if hosts else None


@dataclass
class Slots:
    """The slots one job holds: a job slot (its uid) and its GPUs."""

    job: int
    gpus: list[int]
    _files: list = field(default_factory=list, repr=False)

    @property
    def uid(self) -> int:
        return settings.SANDBOX_UID_BASE + self.job

    def release(self) -> None:
        for handle in self._files:
            with contextlib.suppress(OSError):
                fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
        self._files.clear()

    def __enter__(self) -> Slots:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _slots_dir() -> Path:
    root = Path(settings.EXPERIMENT_WORK_ROOT)
    folder = root / "slots"
    folder.mkdir(parents=True, exist_ok=True)
    # The sandbox user walks through the work root to its own folder.
    os.chmod(root, 0o755)
    return folder


def _uid_locks_dir() -> Path:
    folder = Path(settings.SANDBOX_UID_LOCK_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _try_lock(path: Path):
    handle = open(path, "a+")  # noqa: SIM115 - held open for the job's lifetime
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def _slots_try(*, gpus: int, available: int, folder: Path, uid_locks: Path) -> Slots | None:
    """A job slot and `gpus` GPU slots if they are free now; else None, holding nothing."""
    held = []
    job = None
    for index in range(settings.SANDBOX_MAX_JOBS):
        handle = _try_lock(uid_locks / f"uid-{settings.SANDBOX_UID_BASE + index}.lock")
        if handle is not None:
            held.append(handle)
            job = index
            break
    granted: list[int] = []
    if job is not None:
        for index in range(available):
            if len(granted) == gpus:
                break
            handle = _try_lock(folder / f"gpu-{index}.lock")
            if handle is not None:
                held.append(handle)
                granted.append(index)
    if job is not None and len(granted) == gpus:
        return Slots(job=job, gpus=granted, _files=held)
    Slots(job=-1, gpus=[], _files=held).release()
    return None


def slots_acquire(*, gpus: int, wait_seconds: float = 0.0) -> Slots:
    """Take a job slot and `gpus` GPU slots on this host, waiting up to `wait_seconds`."""
    available = host_gpu_count()
    if gpus > available:
        raise HostTooSmall(f"this host ({host_name()}) has {available} GPU(s); the run asks {gpus}")
    folder, uid_locks = _slots_dir(), _uid_locks_dir()
    slots = poll_until(
        lambda: _slots_try(gpus=gpus, available=available, folder=folder, uid_locks=uid_locks),
        every=0.5,
        timeout=wait_seconds,
    )
    if slots is None:
        raise SlotsBusy(
            f"all {settings.SANDBOX_MAX_JOBS} job slots or {available} GPU slots "
            f"of {host_name()} are in use"
        )
    return slots
