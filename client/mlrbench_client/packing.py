"""Packing a run folder as the site's intake reads it: a zip of the folder's
regular files, refused here for what intake would refuse (links and special
files, nested archives, too many files, too deep), so an upload is not sent
only to be turned away."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

# The site's defaults (INTAKE_MAX_ENTRIES, INTAKE_MAX_PATH_DEPTH,
# INTAKE_MAX_NESTED_ARCHIVES = 0); a site may set others and says so.
MAX_ENTRIES = 10_000
MAX_PATH_DEPTH = 16
ARCHIVE_SUFFIXES = (
    ".zip", ".tar", ".tgz", ".gz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".whl", ".jar",
)  # fmt: skip
UPLOADABLE_AS_IS = (".zip", ".tar.gz", ".tgz", ".md")


class PackingRefused(Exception):
    """The folder cannot be sent; the message says which file and why."""


def _files(folder: Path) -> list[tuple[Path, str]]:
    found: list[tuple[Path, str]] = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in [*dirs]:
            if (Path(root) / name).is_symlink():
                raise PackingRefused(f"{Path(root, name)} is a link; the site refuses links")
        for name in sorted(names):
            path = Path(root) / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink():
                raise PackingRefused(f"{relative} is a link; the site refuses links")
            if not path.is_file():
                raise PackingRefused(f"{relative} is not a regular file")
            if name.lower().endswith(ARCHIVE_SUFFIXES):
                raise PackingRefused(
                    f"{relative} is an archive inside the run; unpack it into the folder instead"
                )
            if relative.count("/") + 1 > MAX_PATH_DEPTH:
                raise PackingRefused(f"{relative} is nested deeper than {MAX_PATH_DEPTH} folders")
            found.append((path, relative))
            if len(found) > MAX_ENTRIES:
                raise PackingRefused(f"the folder has more than {MAX_ENTRIES} files")
    if not found:
        raise PackingRefused(f"{folder} has no files")
    return found


def run_pack(folder: Path, dest: Path) -> int:
    """Zip `folder` into `dest` (paths relative to the folder); returns the
    number of files. The site keys a run on its files, so packing the same
    folder twice, or as tar.gz, is the same submission."""
    files = _files(folder)
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, relative in files:
            archive.write(path, relative)
    return len(files)
