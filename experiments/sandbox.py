"""Run untrusted submission code in a bubblewrap sandbox, with limits.

This module knows nothing of Django models: it takes a `SandboxSpec` and
returns a `SandboxResult`. What it does, layer by layer:

* `bwrap` gives the code its own user, pid, network, IPC, UTS and cgroup
  namespaces: no network but a private loopback, no view of the host's
  processes, and a file system made of read-only system folders (`/usr`), a
  fresh copy of the code at `/work` (the only writable host folder),
  explicitly mounted read-only data, and small size-limited tmpfs for `/tmp`
  and `/dev/shm`. Capabilities are dropped and nested user namespaces are
  refused (`--disable-userns`).
* When the worker runs as root, the whole chain runs as a dedicated
  unprivileged uid per job slot (`setpriv`), so the kernel's per-user process
  limit (RLIMIT_NPROC) applies and any process still owned by that uid after
  the run is, by construction, a leftover of this run and is killed.
* The environment is built from an allow-list; the worker's own variables
  (database URL, secret key, API keys) never reach the sandbox, not even
  bwrap's pid 1, whose `/proc/1/environ` the code can read.
* Limits: wall time (the whole tree is killed, outcome `timed_out`);
  memory through a cgroup (v2 when a delegated subtree with the memory
  controller is writable, else v1), and only when no cgroup is writable,
  RLIMIT_DATA plus a watchdog on the summed RSS of the process tree (never
  RLIMIT_AS: CUDA reserves far more address space than it uses); processes
  and threads through RLIMIT_NPROC, the pids cgroup and a watchdog; bytes
  written: `/work` is a tmpfs of the disk limit's size, mounted by the
  worker (root) for the run, so the kernel counts every byte whatever the
  path and a write past the limit fails (ENOSPC); the code is copied in
  before and the folder copied back after the run, however it ended. `/tmp`
  and `/dev/shm` are tmpfs of the same size. Without root (a development
  machine) the limit falls back to RLIMIT_FSIZE per file plus a watchdog.
* Nothing outlives the run: bwrap's init is pid 1 of the run's pid namespace
  (its death kills every process in it), `--die-with-parent` ties the sandbox
  to the worker, and after the run the cgroup and the slot's uid are swept.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Protocol

# The uid and gid the code sees inside the sandbox (mapped to the slot's uid outside).
logger = logging.getLogger(__name__)


class LogSink(Protocol):
    """Where a run's output goes: a local file, or the stored log (`StoredLog`)."""

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...


INSIDE_UID = 1000
INSIDE_GID = 1000
INSIDE_WORKDIR = "/work"
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"


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


# ---------------------------------------------------------------- preflight


@lru_cache(maxsize=1)
def sandbox_problem() -> str | None:
    """Why the sandbox cannot run on this host, or None when it can.

    Runs a trivial command through the real chain once per process, so a
    missing `bwrap` or blocked user namespaces are named before any job runs.
    """
    for tool in ("bwrap", "prlimit", "setpriv"):
        if shutil.which(tool) is None:
            return (
                f"`{tool}` is not installed on this worker "
                "(apt-get install -y bubblewrap util-linux)"
            )
    command = _bwrap_base(uid_inside=True) + ["--", "/bin/true"]
    if os.geteuid() == 0:
        command = _setpriv(_probe_uid()) + command
    try:
        completed = subprocess.run(
            command, capture_output=True, timeout=30, env={"PATH": SANDBOX_PATH}
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    if completed.returncode != 0:
        detail = completed.stderr.decode(errors="replace").strip()
        return (
            f"bwrap cannot create its namespaces here ({detail}); unprivileged user "
            "namespaces must be allowed (sysctl kernel.unprivileged_userns_clone=1, "
            "user.max_user_namespaces > 0)"
        )
    return None


def _probe_uid() -> int:
    return int(os.environ.get("SANDBOX_PROBE_UID", "65534"))


def _setpriv(uid: int) -> list[str]:
    return [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def _bwrap_base(*, uid_inside: bool) -> list[str]:
    args = [
        "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
    ]
    if uid_inside:
        args += ["--uid", str(INSIDE_UID), "--gid", str(INSIDE_GID)]
    # Debian and most distributions merge /bin, /lib into /usr: keep their links.
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        path = Path(top)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), top]
        elif path.is_dir():
            args += ["--ro-bind", top, top]
    for etc in (
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/alternatives",
        "/etc/localtime",
    ):
        args += ["--ro-bind-try", etc, etc]
    args += ["--proc", "/proc", "--dev", "/dev"]
    return args


# ---------------------------------------------------------------- cgroups


class _Cgroup:
    """A per-run cgroup (v2, or the v1 memory and pids hierarchies)."""

    def __init__(self, mode: str, dirs: dict[str, Path]):
        self.mode = mode
        self.dirs = dirs

    @property
    def has_memory(self) -> bool:
        return "memory" in self.dirs or self.mode == "v2"

    @classmethod
    def create(cls, name: str, limits: Limits, wanted: str) -> _Cgroup | None:
        if wanted == "off":
            return None
        if wanted in ("auto", "v2"):
            group = cls._create_v2(name, limits)
            if group or wanted == "v2":
                return group
        return cls._create_v1(name, limits)

    @staticmethod
    def _own_paths() -> dict[str, str]:
        paths = {}
        with contextlib.suppress(OSError):
            for line in Path("/proc/self/cgroup").read_text().splitlines():
                _, controllers, path = line.split(":", 2)
                for controller in controllers.split(",") if controllers else ["unified"]:
                    paths[controller] = path
        return paths

    @classmethod
    def _create_v2(cls, name: str, limits: Limits) -> _Cgroup | None:
        own = cls._own_paths().get("unified")
        if own is None:
            return None
        for mount in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
            if (mount / "cgroup.controllers").is_file():
                break
        else:
            return None
        parent = mount / own.lstrip("/")
        try:
            enabled = (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            return None
        if "memory" not in enabled or "pids" not in enabled:
            return None
        path = parent / name
        try:
            path.mkdir()
            (path / "memory.max").write_text(str(limits.memory_bytes))
            with contextlib.suppress(OSError):
                (path / "memory.swap.max").write_text("0")
            (path / "pids.max").write_text(str(limits.processes))
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return cls("v2", {"unified": path})

    @classmethod
    def _create_v1(cls, name: str, limits: Limits) -> _Cgroup | None:
        own = cls._own_paths()
        dirs: dict[str, Path] = {}
        for controller in ("memory", "pids"):
            if controller not in own:
                continue
            path = Path("/sys/fs/cgroup") / controller / own[controller].lstrip("/") / name
            try:
                path.mkdir()
                if controller == "memory":
                    (path / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
                    # No swapping around the limit where the kernel accounts swap.
                    with contextlib.suppress(OSError):
                        (path / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_bytes))
                else:
                    (path / "pids.max").write_text(str(limits.processes))
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            dirs[controller] = path
        if "memory" not in dirs:
            for path in dirs.values():
                with contextlib.suppress(OSError):
                    path.rmdir()
            return None
        return cls("v1", dirs)

    def procs_files(self) -> list[Path]:
        return [path / "cgroup.procs" for path in self.dirs.values()]

    def pids(self) -> set[int]:
        found: set[int] = set()
        for procs in self.procs_files():
            with contextlib.suppress(OSError, ValueError):
                found.update(int(line) for line in procs.read_text().split())
        return found

    def _read(self, controller: str, name: str) -> str:
        path = self.dirs.get("unified" if self.mode == "v2" else controller)
        if path is None:
            return ""
        try:
            return (path / name).read_text()
        except OSError:
            return ""

    @staticmethod
    def _key(text: str, key: str) -> int:
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return int(parts[1])
        return 0

    def oom_kills(self) -> int:
        if self.mode == "v2":
            return self._key(self._read("memory", "memory.events"), "oom_kill")
        return self._key(self._read("memory", "memory.oom_control"), "oom_kill")

    def memory_peak(self) -> int | None:
        name = "memory.peak" if self.mode == "v2" else "memory.max_usage_in_bytes"
        with contextlib.suppress(ValueError):
            return int(self._read("memory", name))
        return None

    def pids_refusals(self) -> int:
        return self._key(self._read("pids", "pids.events"), "max")

    def kill(self) -> None:
        if self.mode == "v2":
            with contextlib.suppress(OSError):
                (self.dirs["unified"] / "cgroup.kill").write_text("1")
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        deadline = time.monotonic() + 5
        for path in self.dirs.values():
            while True:
                try:
                    path.rmdir()
                    break
                except OSError as exc:
                    if exc.errno == errno.ENOENT or time.monotonic() > deadline:
                        break
                    self.kill()
                    time.sleep(0.05)


# ---------------------------------------------------------------- process tree


@dataclass
class _Proc:
    pid: int
    ppid: int
    uid: int
    threads: int
    rss_bytes: int


_PAGE = os.sysconf("SC_PAGE_SIZE")


def _read_proc(pid: int) -> _Proc | None:
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
    return _Proc(
        pid=pid, ppid=int(rest[1]), uid=uid, threads=int(rest[17]), rss_bytes=int(rest[21]) * _PAGE
    )


def _all_procs() -> list[_Proc]:
    procs = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            proc = _read_proc(int(entry))
            if proc is not None:
                procs.append(proc)
    return procs


def _tree(root: int, procs: Iterable[_Proc]) -> list[_Proc]:
    by_parent: dict[int, list[_Proc]] = {}
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


def _sandbox_procs(root: int, cgroup: _Cgroup | None, uid: int | None) -> list[_Proc]:
    """The run's processes, found the cheapest way the host allows."""
    if cgroup is not None:
        members = (_read_proc(pid) for pid in cgroup.pids() | {root})
        return [proc for proc in members if proc is not None]
    if uid is not None:
        procs: list[_Proc] = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if os.stat(f"/proc/{entry}").st_uid != uid and int(entry) != root:
                        continue
                    proc = _read_proc(int(entry))
                    if proc is not None:
                        procs.append(proc)
        return procs
    return _tree(root, _all_procs())


def _kill_pids(pids: Iterable[int]) -> int:
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
    return [proc.pid for proc in _all_procs() if proc.uid == uid]


def uid_sweep(uid: int) -> int:
    """Kill every process of a slot's uid; returns how many there were."""
    killed = 0
    for _ in range(20):
        pids = processes_of_uid(uid)
        if not pids:
            break
        killed += _kill_pids(pids)
        time.sleep(0.05)
    return killed


def _bytes_under(root: Path) -> int:
    """Bytes of the files under `root`, walked by directory descriptors so that
    no path is too long to count (os.scandir fails past PATH_MAX)."""
    total = 0
    with contextlib.suppress(OSError):
        for _folder, _dirs, files, dir_fd in os.fwalk(root):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_size
    return total


def _largest_file(root: Path) -> int:
    largest = 0
    with contextlib.suppress(OSError):
        for _folder, _dirs, files, dir_fd in os.fwalk(root):
            for name in files:
                with contextlib.suppress(OSError):
                    size = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_size
                    largest = max(largest, size)
    return largest


# ---------------------------------------------------------------- the run

_MEMORY_ERRORS = re.compile(
    rb"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory", re.IGNORECASE
)


def host_gpu_devices() -> list[str]:
    """The NVIDIA device nodes a GPU job needs to see."""
    return sorted(str(path) for path in Path("/dev").glob("nvidia*") if path.is_char_device())


def path_reachable_problem(path: Path, uid: int | None) -> str | None:
    """Why the sandbox user could not reach `path` (bwrap mounts it as that user)."""
    if uid is None:
        return None if os.access(path, os.R_OK) else f"{path} is not readable"
    path = Path(path).resolve()
    if not path.exists():
        return f"{path} does not exist"
    for folder in [*reversed(path.parents), path]:
        info = folder.stat()
        if info.st_uid == uid:
            continue
        if stat.S_ISDIR(info.st_mode) and not info.st_mode & stat.S_IXOTH:
            return (
                f"{folder} cannot be entered by the sandbox user (uid {uid}): "
                "give it the execute bit for others (chmod o+x)"
            )
    return None


def sandbox_env(spec: SandboxSpec, passthrough: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of the sandbox: an allow-list, never the worker's own."""
    env = {
        "PATH": SANDBOX_PATH,
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        # An empty value hides every GPU from CUDA; PCI order matches nvidia-smi.
        "CUDA_VISIBLE_DEVICES": ",".join(str(gpu) for gpu in spec.gpus),
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "NVIDIA_VISIBLE_DEVICES": ",".join(str(gpu) for gpu in spec.gpus) or "void",
    }
    env.update(passthrough or {})
    env.update(spec.env)
    return env


class WorkDiskUnavailable(Exception):
    """This host cannot mount a tmpfs (no CAP_SYS_ADMIN): the watchdog counts."""


class WorkDisk:
    """A tmpfs of `size` bytes that holds a run's `/work`: the kernel counts
    every byte written to it, whatever the path, and refuses the write that
    would go past the size. Mounted next to the work folder (root only)."""

    def __init__(self, workdir: Path, size: int):
        self.workdir = workdir
        self.size = size
        self.path = workdir.with_name(workdir.name + ".disk")
        self.mounted = False

    @staticmethod
    def available() -> bool:
        return os.geteuid() == 0 and shutil.which("mount") is not None

    def mount(self) -> None:
        info = os.stat(self.workdir)
        self.path.mkdir(mode=0o755, exist_ok=True)
        options = f"size={self.size},mode=0755,uid={info.st_uid},gid={info.st_gid},nosuid,nodev"
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(self.path)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            with contextlib.suppress(OSError):
                self.path.rmdir()
            raise WorkDiskUnavailable(done.stderr.decode(errors="replace").strip())
        self.mounted = True
        copied = subprocess.run(
            ["cp", "-a", f"{self.workdir}/.", f"{self.path}/"], capture_output=True, check=False
        )
        if copied.returncode != 0:
            self.unmount()
            raise SandboxError(
                f"the code does not fit the disk limit of {self.size} bytes: "
                f"{copied.stderr.decode(errors='replace').strip()[:200]}"
            )

    def used(self) -> int:
        stats = os.statvfs(self.path)
        return (stats.f_blocks - stats.f_bfree) * stats.f_frsize

    def full(self) -> bool:
        # tmpfs counts whole pages: a disk within a page or two of its size is full.
        return self.used() >= self.size - 2 * os.sysconf("SC_PAGE_SIZE")

    def copy_back(self) -> None:
        """The run's folder as the run left it, back in the work folder."""
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir.mkdir(mode=0o755)
        # What cp cannot reach (paths past PATH_MAX) stays behind: no output anyway.
        subprocess.run(
            ["cp", "-a", f"{self.path}/.", f"{self.workdir}/"], capture_output=True, check=False
        )

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True, check=False)
            self.mounted = False
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _bwrap_command(
    spec: SandboxSpec, etc_dir: Path | None, disk: WorkDisk | None = None
) -> list[str]:
    args = _bwrap_base(uid_inside=True)
    if etc_dir is not None:
        args += ["--ro-bind", str(etc_dir / "passwd"), "/etc/passwd"]
        args += ["--ro-bind", str(etc_dir / "group"), "/etc/group"]
    size = str(spec.limits.disk_bytes)
    args += ["--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", "/dev/shm"]
    work = disk.path if disk else spec.workdir
    args += ["--bind", str(work), INSIDE_WORKDIR]
    for relative in spec.read_only:
        parts = PurePosixPath(relative).parts
        if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
            raise SandboxError(f"read-only path {relative!r} leaves the work folder")
        source = Path(work).joinpath(*parts)
        if (source.is_file() or source.is_dir()) and not source.is_symlink():
            args += ["--ro-bind", str(source), f"{INSIDE_WORKDIR}/{'/'.join(parts)}"]
    for mount in spec.mounts:
        args += ["--bind" if mount.writable else "--ro-bind", str(mount.source), mount.target]
    if spec.gpus:
        for device in host_gpu_devices():
            args += ["--dev-bind", device, device]
        # The CUDA driver reads the PCI topology from sysfs.
        args += ["--ro-bind", "/sys", "/sys"]
    # bwrap's root is a tmpfs; read-only, it cannot become an unmetered scratch disk.
    args += ["--remount-ro", "/"]
    args += ["--chdir", spec.cwd, "--", "/bin/sh", "-c", spec.command]
    return args


def _launcher(
    spec: SandboxSpec, cgroup: _Cgroup | None, etc_dir: Path | None, disk: WorkDisk | None = None
) -> list[str]:
    limits = spec.limits
    nproc = limits.processes
    if spec.uid is None:
        # Without a dedicated uid the per-user count includes the worker's own tasks.
        nproc += sum(p.threads for p in _all_procs() if p.uid == os.getuid())
    rlimits = [f"--nproc={nproc}", f"--fsize={limits.disk_bytes}", "--core=0"]
    if cgroup is None or not cgroup.has_memory:
        # Only without a memory cgroup: per-process cap on private writable memory.
        # Not RLIMIT_AS, which CUDA's address-space reservations exceed at once.
        rlimits.append(f"--data={limits.memory_bytes}")
    command = ["prlimit", *rlimits, "--"]
    if spec.uid is not None:
        command += _setpriv(spec.uid)
    command += _bwrap_command(spec, etc_dir, disk)
    if cgroup is not None:
        # Enter the cgroup before anything else runs, so no child escapes it.
        script = (
            'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
        )
        command = [
            "/bin/sh",
            "-c",
            script,
            "sh",
            *map(str, cgroup.procs_files()),
            "--",
            *command,
        ]
    return command


def _write_etc(scratch: Path) -> Path:
    etc_dir = scratch / "etc"
    etc_dir.mkdir(parents=True, exist_ok=True)
    (etc_dir / "passwd").write_text(
        f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"sandbox:x:{INSIDE_UID}:{INSIDE_GID}:sandbox:/tmp:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    (etc_dir / "group").write_text(f"root:x:0:\nsandbox:x:{INSIDE_GID}:\nnogroup:x:65534:\n")
    for name in ("passwd", "group"):
        os.chmod(etc_dir / name, 0o644)
    os.chmod(etc_dir, 0o755)
    return etc_dir


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
    cgroup = _Cgroup.create(name, spec.limits, spec.cgroups)
    enforcement = f"cgroup {cgroup.mode}" if cgroup else "RLIMIT_DATA + RSS watchdog"
    etc_dir = _write_etc(spec.scratch) if spec.scratch else None
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
    cgroup: _Cgroup | None,
    etc_dir: Path | None,
    disk: WorkDisk | None,
    enforcement: str,
    *,
    log: LogSink,
    options: tuple[Callable[[], bool] | None, int, dict[str, str] | None, float, float],
) -> SandboxResult:
    should_cancel, log_max_bytes, env_passthrough, poll_seconds, cancel_poll_seconds = options
    command = _launcher(spec, cgroup, etc_dir, disk)

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

    watch = _Watch(spec=spec, process=process, cgroup=cgroup, started=started, disk=disk)
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
class _Stop:
    """Why the watchdog stopped a run early (all empty: it ended by itself)."""

    limit: str = Limit.NONE
    reason: str = ""
    outcome: str | None = None


@dataclass
class _Watch:
    """The watchdog: polls a running sandbox for the limits the kernel does not
    enforce by itself here (wall time, cancel, process count, memory without
    a memory cgroup, bytes written)."""

    spec: SandboxSpec
    process: subprocess.Popen
    cgroup: _Cgroup | None
    started: float
    disk: WorkDisk | None = None
    peak_rss: int = 0

    def until_stopped(
        self,
        *,
        should_cancel: Callable[[], bool] | None,
        poll_seconds: float,
        cancel_poll_seconds: float,
    ) -> _Stop:
        next_cancel = next_disk = 0.0
        while self.process.poll() is None:
            now = time.monotonic()
            if now - self.started > self.spec.limits.wall_seconds:
                return _Stop(
                    Limit.WALL_TIME,
                    f"killed after the wall-time limit of {self.spec.limits.wall_seconds:g} s",
                    Outcome.TIMED_OUT,
                )
            if should_cancel is not None and now >= next_cancel:
                next_cancel = now + cancel_poll_seconds
                if should_cancel():
                    return _Stop(Limit.NONE, "cancelled by an organiser", Outcome.CANCELLED)
            stop = self._resources_exceeded(check_disk=now >= next_disk)
            if now >= next_disk:
                next_disk = now + 0.5
            if stop is not None:
                return stop
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=poll_seconds)
        return _Stop()

    def _resources_exceeded(self, *, check_disk: bool) -> _Stop | None:
        limits = self.spec.limits
        tree = _sandbox_procs(self.process.pid, self.cgroup, self.spec.uid)
        rss = sum(proc.rss_bytes for proc in tree)
        self.peak_rss = max(self.peak_rss, rss)
        if sum(proc.threads for proc in tree) >= limits.processes:
            return _Stop(
                Limit.PROCESSES, f"killed at the limit of {limits.processes} processes and threads"
            )
        if (self.cgroup is None or not self.cgroup.has_memory) and rss >= limits.memory_bytes:
            return _Stop(
                Limit.MEMORY, f"killed at the memory limit of {limits.memory_bytes} bytes (RSS)"
            )
        # With the work disk the kernel refuses writes at the limit; the run may go on.
        if (
            check_disk
            and self.disk is None
            and _bytes_under(self.spec.workdir) >= limits.disk_bytes
        ):
            return _Stop(Limit.DISK, f"killed after writing {limits.disk_bytes} bytes")
        return None


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
    process: subprocess.Popen,
    cgroup: _Cgroup | None,
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
        _kill_pids(proc.pid for proc in _sandbox_procs(process.pid, cgroup, uid))
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


def _kill_run(process: subprocess.Popen, cgroup: _Cgroup | None, uid: int | None) -> None:
    # Kill what runs now (taken before the kill, since the tree falls apart
    # after): the outer bwrap's group, whose init then dies (die-with-parent)
    # and takes the pid namespace with it; the rest are belts and braces.
    running = [proc.pid for proc in _sandbox_procs(process.pid, cgroup, uid)]
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if cgroup is not None:
        cgroup.kill()
    _kill_pids(running)


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
        _largest_file(spec.workdir) >= limits.disk_bytes
        or _bytes_under(spec.workdir) >= limits.disk_bytes
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
