"""The command line of a run: bwrap's namespaces and mounts, the uid it runs as
(`setpriv`), its rlimits (`prlimit`), its entry into the cgroup, its
allow-listed environment, and the preflight that runs the chain once."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from functools import lru_cache
from pathlib import Path, PurePosixPath

from sandbox.cgroups import Cgroup
from sandbox.processes import all_procs
from sandbox.spec import (
    HOST_PATH,
    INSIDE_GID,
    INSIDE_UID,
    INSIDE_WORKDIR,
    PYTHON_FALLBACK_DIR,
    SANDBOX_PATH,
    SandboxError,
    SandboxSpec,
)
from sandbox.workdisk import WorkDisk


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
    python3 = shutil.which("python3", path=HOST_PATH)
    if python3 is not None:
        args += ["--symlink", python3, f"{PYTHON_FALLBACK_DIR}/python"]
    # bwrap's root is a tmpfs; read-only, it cannot become an unmetered scratch disk.
    args += ["--remount-ro", "/"]
    args += ["--chdir", spec.cwd, "--", "/bin/sh", "-c", spec.command]
    return args


def launcher(
    spec: SandboxSpec, cgroup: Cgroup | None, etc_dir: Path | None, disk: WorkDisk | None = None
) -> list[str]:
    limits = spec.limits
    nproc = limits.processes
    if spec.uid is None:
        # Without a dedicated uid the per-user count includes the worker's own tasks.
        nproc += sum(p.threads for p in all_procs() if p.uid == os.getuid())
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


def write_etc(scratch: Path) -> Path:
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
