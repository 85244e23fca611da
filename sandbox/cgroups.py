"""A run's own cgroup: v2 where a delegated subtree with the memory and pids
controllers is writable, else the v1 memory and pids hierarchies."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from pathlib import Path

from sandbox.spec import Limits


class Cgroup:
    """A per-run cgroup (v2, or the v1 memory and pids hierarchies)."""

    def __init__(self, mode: str, dirs: dict[str, Path]):
        self.mode = mode
        self.dirs = dirs

    @property
    def has_memory(self) -> bool:
        return "memory" in self.dirs or self.mode == "v2"

    @classmethod
    def create(cls, name: str, limits: Limits, wanted: str) -> Cgroup | None:
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
    def _create_v2(cls, name: str, limits: Limits) -> Cgroup | None:
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
    def _create_v1(cls, name: str, limits: Limits) -> Cgroup | None:
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
