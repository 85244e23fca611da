"""Unpacking an agent's run safely: a zip or tar.gz archive, a single markdown
file, or (for the import) files of a folder on disk.

Nothing here trusts the archive: sizes, counts and the compression ratio are
counted on the bytes actually read, never taken from headers; every name is
checked before anything is written; only regular files are ever created, each
with `O_EXCL | O_NOFOLLOW`, strictly under the destination folder. Pure
functions, no database: the intake service decides what to keep.
"""

import codecs
import hashlib
import os
import re
import stat
import struct
import tarfile
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, BinaryIO, cast

from django.conf import settings

from common.errors import ValidationFailed

CHUNK = 1024 * 1024
# Below this many unpacked bytes the compression ratio says nothing: tiny
# files of zeros compress a thousandfold and harm no one.
RATIO_FLOOR_BYTES = 1024 * 1024
MAX_NAME_COMPONENT_BYTES = 255

# Junk that archivers on macOS add; skipped, never stored.
_JUNK_PARTS = {"__MACOSX", ".DS_Store"}

_ARCHIVE_SUFFIXES = (
    ".zip",
    ".tar",
    ".tgz",
    ".gz",
    ".bz2",
    ".xz",
    ".zst",
    ".7z",
    ".rar",
    ".lz4",
    ".tbz2",
    ".txz",
)
# Formats that are zip files inside but are data, not archives to unpack
# (numpy, PyTorch checkpoints, office documents).
_ZIP_CONTAINER_SUFFIXES = (".npz", ".pt", ".pth", ".ckpt", ".docx", ".xlsx", ".pptx", ".jar")
_ARCHIVE_MAGIC = (
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"BZh",
    b"\xfd7zXZ\x00",
    b"7z\xbc\xaf\x27\x1c",
    b"Rar!\x1a\x07",
    b"\x28\xb5\x2f\xfd",
)

# Images must be what their extension says: the site serves them inline.
_IMAGE_MAGIC: dict[str, tuple[str, Callable[[bytes], bool]]] = {
    ".png": ("a PNG image", lambda head: head.startswith(b"\x89PNG\r\n\x1a\n")),
    ".jpg": ("a JPEG image", lambda head: head.startswith(b"\xff\xd8\xff")),
    ".jpeg": ("a JPEG image", lambda head: head.startswith(b"\xff\xd8\xff")),
    ".gif": ("a GIF image", lambda head: head[:6] in (b"GIF87a", b"GIF89a")),
    ".webp": ("a WebP image", lambda head: head[:4] == b"RIFF" and head[8:12] == b"WEBP"),
}
IMAGE_SUFFIXES = frozenset(_IMAGE_MAGIC)

_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
# Bidirectional controls (marks, embeddings, overrides, isolates) make a name
# read as another on every page that shows it (`gpj.exe` shown as `exe.jpg`).
_BIDI_RE = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_DRIVE_RE = re.compile(r"^[A-Za-z]:")


class ArchiveRefused(ValidationFailed):
    """The archive (or one entry of it) is refused; the message says why, for the user."""

    default_code = "archive_refused"


@dataclass(frozen=True)
class IntakeLimits:
    max_archive_bytes: int
    max_unpacked_bytes: int
    max_entries: int
    max_ratio: int
    max_depth: int
    max_nested_archives: int
    max_path_length: int = 400

    @classmethod
    def from_settings(cls) -> "IntakeLimits":
        return cls(
            max_archive_bytes=settings.INTAKE_MAX_ARCHIVE_BYTES,
            max_unpacked_bytes=settings.INTAKE_MAX_UNPACKED_BYTES,
            max_entries=settings.INTAKE_MAX_ENTRIES,
            max_ratio=settings.INTAKE_MAX_COMPRESSION_RATIO,
            max_depth=settings.INTAKE_MAX_PATH_DEPTH,
            max_nested_archives=settings.INTAKE_MAX_NESTED_ARCHIVES,
        )


@dataclass(frozen=True)
class UnpackedFile:
    path: str  # relative, '/'-separated, checked
    size: int
    sha256: str


@dataclass
class _Entry:
    """One member of an archive, as the reader sees it, before any check."""

    name: str
    kind: str  # "file", "dir" or a word for what else it is ("symlink", "device", ...)
    compressed_size: int | None
    open: Callable[[], IO[bytes] | None] | None


def human_size(n: int) -> str:
    size: float = n
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}".replace(".0 ", " ")
        size /= 1024
    return str(size)


def _shown(name: str) -> str:
    """A name for a message, quoted: bytes that are not UTF-8 and control
    characters as one `\\xNN` escape each (repr() would double the backslash)."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = name.encode("utf-8", "backslashreplace")
    text = raw.decode("utf-8", "backslashreplace")
    text = _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)
    return f"'{text}'"


def name_check(name: str, limits: IntakeLimits) -> str | None:
    """The checked relative path of an entry name, or None for a folder-only
    name such as `./`. Raises ArchiveRefused for anything that could leave
    the destination or that the site could not store faithfully."""
    shown = _shown(name)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ArchiveRefused(f"a file name is not valid UTF-8: {shown}") from None
    if _CONTROL_RE.search(name):
        raise ArchiveRefused(f"a file name contains control characters: {shown}")
    if bidi := _BIDI_RE.search(name):
        raise ArchiveRefused(
            f"a file name contains a bidirectional control character "
            f"(U+{ord(bidi.group()):04X}): {_BIDI_RE.sub('?', shown)}"
        )
    # One spelling per name: `café` composed and decomposed are the same file
    # to a reader (and to macOS), so they are stored as one, and twins collide.
    name = unicodedata.normalize("NFC", name)
    if "\\" in name:
        raise ArchiveRefused(f"a file name contains a backslash: {shown}")
    if name.startswith("/") or _DRIVE_RE.match(name):
        raise ArchiveRefused(f"{shown} is an absolute path; paths must be relative")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ArchiveRefused(f"{shown} points outside the archive (it contains '..')")
    if not parts:
        return None
    if len(parts) > limits.max_depth:
        raise ArchiveRefused(
            f"{shown} is nested {len(parts)} folders deep; the limit is {limits.max_depth}"
        )
    path = "/".join(parts)
    if len(path) > limits.max_path_length or any(
        len(part.encode("utf-8")) > MAX_NAME_COMPONENT_BYTES for part in parts
    ):
        raise ArchiveRefused(f"the path {shown[:80]}… is too long")
    return path


def _is_junk(path: str) -> bool:
    parts = path.split("/")
    return any(part in _JUNK_PARTS for part in parts) or parts[-1].startswith("._")


def _looks_like_archive(path: str, head: bytes) -> bool:
    lower = path.lower()
    if lower.endswith(_ZIP_CONTAINER_SUFFIXES):
        return False
    if lower.endswith(_ARCHIVE_SUFFIXES):
        return True
    return head.startswith(_ARCHIVE_MAGIC) or head[257:262] == b"ustar"


def _image_check(path: str, head: bytes) -> None:
    suffix = os.path.splitext(path)[1].lower()
    expected = _IMAGE_MAGIC.get(suffix)
    if expected and not expected[1](head):
        raise ArchiveRefused(f"{path} is not {expected[0]}: its content does not match its name")


class _Unpacker:
    """Writes checked entries under `dest`, counting everything on the way."""

    def __init__(
        self,
        dest: Path,
        limits: IntakeLimits,
        *,
        compressed_bytes: Callable[[], int] | None = None,
        archive_bytes: int | None = None,
        on_problem: Callable[[str], None] | None = None,
    ):
        self.dest = dest
        self.limits = limits
        self.compressed_bytes = compressed_bytes
        # The whole archive's size: what all its entries together may inflate
        # to is counted against it, so many small entries (each under the
        # per-entry floor) cannot add up to a bomb.
        self.archive_bytes = archive_bytes
        # Without on_problem every problem refuses the whole archive; with it
        # (the import of a folder) the bad file is named and left out.
        self.on_problem = on_problem
        self.entries = 0
        self.unpacked = 0
        self.nested: list[str] = []
        self.files: dict[str, UnpackedFile] = {}
        self.folders: set[str] = set()

    def refuse_or_skip(self, message: str) -> None:
        if self.on_problem is None:
            raise ArchiveRefused(message)
        self.on_problem(message)

    def add(self, entry: _Entry) -> None:
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise ArchiveRefused(
                f"the archive has more than {self.limits.max_entries} entries; that is the limit"
            )
        try:
            path = name_check(entry.name, self.limits)
            if path is None or _is_junk(path):
                return
            if entry.kind == "dir":
                self.folders.add(path)
                return
            if entry.kind != "file":
                raise ArchiveRefused(
                    f"{path} is a {entry.kind}; only regular files and folders are accepted"
                )
            if path in self.files or path in self.folders:
                raise ArchiveRefused(f"{path} appears twice in the archive")
            self._write(path, entry)
        except ArchiveRefused as exc:
            self.refuse_or_skip(str(exc))

    def _target(self, path: str) -> Path:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            if prefix in self.files:
                raise ArchiveRefused(f"{path} needs a folder {prefix}, which is also a file")
            self.folders.add(prefix)
        target = self.dest.joinpath(*parts)
        # Belt and braces: the name check already ruled out leaving dest.
        if not target.resolve(strict=False).is_relative_to(self.dest.resolve()):
            raise ArchiveRefused(f"{path} points outside the archive")
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def _write(self, path: str, entry: _Entry) -> None:
        target = self._target(path)
        limits = self.limits
        try:
            source = entry.open() if entry.open else None
        except (OSError, zipfile.BadZipFile, tarfile.TarError, RuntimeError, ValueError) as exc:
            raise ArchiveRefused(f"{path} cannot be read: {exc}") from None
        if source is None:
            raise ArchiveRefused(f"{path} cannot be read")
        digest = hashlib.sha256()
        size = 0
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            with os.fdopen(fd, "wb") as out, source:
                first = True
                while True:
                    try:
                        chunk = source.read(CHUNK)
                    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError) as exc:
                        raise ArchiveRefused(f"{path} is damaged: {exc}") from None
                    if not chunk:
                        break
                    if first:
                        first = False
                        _image_check(path, chunk)
                        if _looks_like_archive(path, chunk):
                            self.nested.append(path)
                            if len(self.nested) > limits.max_nested_archives:
                                raise ArchiveRefused(
                                    f"{path} is itself an archive; unpack it into the upload "
                                    f"instead (at most {limits.max_nested_archives} nested "
                                    "archives are accepted)"
                                )
                    size += len(chunk)
                    self.unpacked += len(chunk)
                    self._check_growth(path, size, entry.compressed_size)
                    digest.update(chunk)
                    out.write(chunk)
                if first:
                    _image_check(path, b"")
        except BaseException:
            target.unlink(missing_ok=True)
            raise
        self.files[path] = UnpackedFile(path=path, size=size, sha256=digest.hexdigest())

    def _check_growth(self, path: str, size: int, compressed_size: int | None) -> None:
        limits = self.limits
        if self.unpacked > limits.max_unpacked_bytes:
            raise ArchiveRefused(
                f"the archive unpacks to more than {human_size(limits.max_unpacked_bytes)}; "
                "that is the limit"
            )
        if self.archive_bytes is not None and (
            self.unpacked > RATIO_FLOOR_BYTES
            and self.unpacked > limits.max_ratio * max(self.archive_bytes, 1)
        ):
            raise ArchiveRefused(
                f"the archive expands more than {limits.max_ratio} times its "
                f"{human_size(self.archive_bytes)} in all: it looks like a compression bomb"
            )
        if compressed_size is not None:
            if size > RATIO_FLOOR_BYTES and size > limits.max_ratio * max(compressed_size, 1):
                raise ArchiveRefused(
                    f"{path} expands more than {limits.max_ratio} times: "
                    "it looks like a compression bomb"
                )
        elif self.compressed_bytes is not None:
            consumed = max(self.compressed_bytes(), 1)
            if self.unpacked > RATIO_FLOOR_BYTES and self.unpacked > limits.max_ratio * consumed:
                raise ArchiveRefused(
                    f"the archive expands more than {limits.max_ratio} times: "
                    "it looks like a compression bomb"
                )


def _zip_name(info: zipfile.ZipInfo) -> str:
    if info.flag_bits & 0x800:
        return info.filename
    # No UTF-8 flag: zipfile decoded the raw bytes as cp437. Many tools write
    # UTF-8 without the flag, so the raw bytes must be UTF-8; anything else is
    # a name the site cannot show faithfully.
    raw = info.orig_filename.encode("cp437")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogateescape")


_ZIP_TYPES = {
    stat.S_IFLNK: "symbolic link",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFIFO: "named pipe",
    stat.S_IFSOCK: "socket",
}


def _zip_entries(archive: zipfile.ZipFile) -> Iterator[_Entry]:
    for info in archive.infolist():
        name = _zip_name(info)
        mode = info.external_attr >> 16
        file_type = stat.S_IFMT(mode)
        if info.flag_bits & 0x1:
            raise ArchiveRefused(f"{name} is encrypted; upload an unencrypted archive")
        if file_type in _ZIP_TYPES:
            yield _Entry(name, _ZIP_TYPES[file_type], None, None)
        elif info.is_dir():
            yield _Entry(name, "dir", None, None)
        else:
            yield _Entry(name, "file", info.compress_size, partial(archive.open, info, "r"))


_TAR_KINDS = {
    tarfile.SYMTYPE: "symbolic link",
    tarfile.LNKTYPE: "hard link",
    tarfile.CHRTYPE: "character device",
    tarfile.BLKTYPE: "block device",
    tarfile.FIFOTYPE: "named pipe",
    tarfile.CONTTYPE: "contiguous file",
    tarfile.GNUTYPE_SPARSE: "sparse file",
}


def _tar_entries(archive: tarfile.TarFile) -> Iterator[_Entry]:
    while True:
        try:
            member = archive.next()
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise ArchiveRefused(f"the tar.gz archive is damaged: {exc}") from None
        if member is None:
            return
        if member.isdir():
            yield _Entry(member.name, "dir", None, None)
        elif member.isreg() and not member.issparse():
            yield _Entry(member.name, "file", None, partial(archive.extractfile, member))
        else:
            yield _Entry(member.name, _TAR_KINDS.get(member.type, "special file"), None, None)


# Compressed bytes fed to zlib per step; the inflated output of one step is
# capped at INFLATE_STEP, whatever the ratio, so memory stays bounded.
DEFLATE_READ = 64 * 1024
INFLATE_STEP = 256 * 1024


class _GzipStream:
    """The tar stream inside a gzip file, inflated in bounded steps, with every
    inflated byte (headers, padding, skipped junk) counted against the
    unpacked-size and ratio limits before it is handed to tarfile."""

    def __init__(self, raw: BinaryIO, limits: IntakeLimits):
        self.raw = raw
        self.limits = limits
        self.consumed = 0  # compressed bytes read
        self.inflated = 0
        self._zlib = zlib.decompressobj(wbits=31)
        self._pending = b""  # compressed input not yet inflated
        self._buffer = bytearray()
        self._eof = False

    def _step(self) -> None:
        if not self._pending:
            self._pending = self.raw.read(DEFLATE_READ)
            self.consumed += len(self._pending)
            if not self._pending:
                if not self._zlib.eof:
                    raise ArchiveRefused("the tar.gz archive is damaged: it ends too early")
                self._eof = True
                return
        if self._zlib.eof:  # a further gzip member (`cat a.gz b.gz`)
            self._zlib = zlib.decompressobj(wbits=31)
        try:
            out = self._zlib.decompress(self._pending, INFLATE_STEP)
        except zlib.error as exc:
            raise ArchiveRefused(f"the tar.gz archive is damaged: {exc}") from None
        self._pending = self._zlib.unconsumed_tail or self._zlib.unused_data
        self._count(len(out))
        self._buffer += out

    def _count(self, size: int) -> None:
        self.inflated += size
        limits = self.limits
        if self.inflated > limits.max_unpacked_bytes:
            raise ArchiveRefused(
                f"the archive unpacks to more than {human_size(limits.max_unpacked_bytes)}; "
                "that is the limit"
            )
        if self.inflated > RATIO_FLOOR_BYTES and self.inflated > limits.max_ratio * max(
            self.consumed, 1
        ):
            raise ArchiveRefused(
                f"the archive expands more than {limits.max_ratio} times: "
                "it looks like a compression bomb"
            )

    def read(self, size: int = -1) -> bytes:
        wanted = CHUNK if size is None or size < 0 else size
        while len(self._buffer) < wanted and not self._eof:
            self._step()
        data = bytes(self._buffer[:wanted])
        del self._buffer[:wanted]
        return data


def _zip_entry_count(path: Path) -> int | None:
    """The entry count the zip's end-of-central-directory record (or its
    zip64 record) announces, read from the file's end before zipfile parses
    the whole directory; None when the record is not found."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        tail_size = min(size, 22 + 65535 + 20)
        handle.seek(size - tail_size)
        tail = handle.read(tail_size)
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) < at + 22:
            return None
        (count,) = struct.unpack("<H", tail[at + 10 : at + 12])
        if count != 0xFFFF or at < 20 or tail[at - 20 : at - 16] != b"PK\x06\x07":
            return count
        (offset,) = struct.unpack("<Q", tail[at - 12 : at - 4])
        handle.seek(offset)
        record = handle.read(56)
        if len(record) < 56 or record[:4] != b"PK\x06\x06":
            return None
        (count64,) = struct.unpack("<Q", record[32:40])
        return int(count64)


def archive_format(path: Path) -> str | None:
    """`zip`, `tar.gz` or None, from the first bytes (never from the name)."""
    with path.open("rb") as handle:
        head = handle.read(4)
    if head in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if head[:2] == b"\x1f\x8b":
        return "tar.gz"
    return None


def archive_unpack(*, source: Path, dest: Path, limits: IntakeLimits) -> list[UnpackedFile]:
    """Unpack a zip or tar.gz archive into the empty folder `dest`.

    Raises ArchiveRefused on the first problem; the caller removes `dest`.
    """
    size = source.stat().st_size
    if size > limits.max_archive_bytes:
        limit = human_size(limits.max_archive_bytes)
        raise ArchiveRefused(f"the archive is {human_size(size)}; the limit is {limit}")
    kind = archive_format(source)
    if kind == "zip":
        announced = _zip_entry_count(source)
        if announced is not None and announced > limits.max_entries:
            raise ArchiveRefused(
                f"the archive has {announced} entries; the limit is {limits.max_entries}"
            )
        try:
            archive = zipfile.ZipFile(source)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise ArchiveRefused(f"the zip archive cannot be read: {exc}") from None
        with archive:
            if len(archive.infolist()) > limits.max_entries:
                raise ArchiveRefused(
                    f"the archive has {len(archive.infolist())} entries; "
                    f"the limit is {limits.max_entries}"
                )
            unpacker = _Unpacker(dest, limits, archive_bytes=size)
            for entry in _zip_entries(archive):
                unpacker.add(entry)
    elif kind == "tar.gz":
        with source.open("rb") as raw:
            # We inflate (bounded steps, every byte counted); tarfile reads a plain stream.
            stream = _GzipStream(raw, limits)
            try:
                # The stubs ask any file object for write and seek; a stream ("r|") only reads.
                tar = tarfile.open(  # noqa: SIM115
                    fileobj=cast(IO[bytes], stream), mode="r|", bufsize=CHUNK
                )
            except (tarfile.TarError, EOFError, OSError) as exc:
                raise ArchiveRefused(f"the tar.gz archive cannot be read: {exc}") from None
            with tar:
                unpacker = _Unpacker(
                    dest, limits, compressed_bytes=lambda: stream.consumed, archive_bytes=size
                )
                for entry in _tar_entries(tar):
                    unpacker.add(entry)
    else:
        raise ArchiveRefused("the file is not a zip or tar.gz archive")
    if not unpacker.files:
        raise ArchiveRefused("the archive is empty: it has no files")
    return list(unpacker.files.values())


def markdown_unpack(
    *, source: Path, dest: Path, name: str, limits: IntakeLimits
) -> list[UnpackedFile]:
    """A single markdown file (idea and proposal stages), stored as `name`."""
    size = source.stat().st_size
    if size > limits.max_archive_bytes:
        raise ArchiveRefused(
            f"the file is {human_size(size)}; the limit is {human_size(limits.max_archive_bytes)}"
        )
    decoder = codecs.getincrementaldecoder("utf-8")()
    blank = True
    with source.open("rb") as handle:
        try:
            while chunk := handle.read(CHUNK):
                text = decoder.decode(chunk)
                if "\x00" in text:
                    raise ArchiveRefused("the markdown file contains NUL bytes: it is not text")
                blank = blank and not text.strip()
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise ArchiveRefused("the markdown file is not UTF-8 text") from None
    if blank:
        raise ArchiveRefused("the markdown file is empty")
    unpacker = _Unpacker(dest, limits)
    unpacker.add(_Entry(name, "file", None, lambda: source.open("rb")))
    return list(unpacker.files.values())


def folder_unpack(
    *,
    files: list[tuple[Path, str]],
    dest: Path,
    limits: IntakeLimits,
    on_problem: Callable[[str], None],
) -> list[UnpackedFile]:
    """Copy `(source file, relative path)` pairs from a folder on disk (the
    import). A file that cannot be read, a link or a bad name is named
    through `on_problem` and left out; the rest is copied."""
    unpacker = _Unpacker(dest, limits, on_problem=on_problem)
    for source, name in files:
        try:
            mode = source.lstat().st_mode
        except OSError as exc:
            on_problem(f"{source}: cannot be read ({exc.strerror})")
            continue
        if stat.S_ISLNK(mode):
            kind = "symbolic link"
        elif stat.S_ISREG(mode):
            kind = "file"
        else:
            kind = "special file"

        def opener(source: Path = source) -> BinaryIO:
            return source.open("rb")

        unpacker.add(_Entry(name, kind, None, opener))
    return list(unpacker.files.values())


def files_digest(files: list[UnpackedFile]) -> str:
    """One SHA-256 for a set of files (paths and contents), for runs that
    come as a folder rather than an archive."""
    digest = hashlib.sha256()
    for item in sorted(files, key=lambda item: item.path):
        digest.update(f"{item.path}\0{item.sha256}\n".encode())
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
