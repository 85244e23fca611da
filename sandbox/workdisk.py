"""The bytes a run writes: a tmpfs of the disk limit's size that holds `/work`
(root only), and the walk that counts bytes where no tmpfs can be mounted."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

from sandbox.spec import SandboxError


def bytes_under(root: Path) -> int:
    """Bytes of the files under `root`, walked by directory descriptors so that
    no path is too long to count (os.scandir fails past PATH_MAX)."""
    total = 0
    with contextlib.suppress(OSError):
        for _folder, _dirs, files, dir_fd in os.fwalk(root):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_size
    return total


def largest_file(root: Path) -> int:
    largest = 0
    with contextlib.suppress(OSError):
        for _folder, _dirs, files, dir_fd in os.fwalk(root):
            for name in files:
                with contextlib.suppress(OSError):
                    size = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_size
                    largest = max(largest, size)
    return largest


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
