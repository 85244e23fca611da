"""Archive intake under hostile input (issue 20, findings 2 and 9): every
inflated byte of a tar.gz counts, junk included, in bounded memory; a zip's
entry count is checked before its directory is parsed; messages are exact."""

import io
import tarfile
import tracemalloc
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from submissions import archives
from submissions.archives import ArchiveRefused, IntakeLimits, archive_unpack, name_check
from submissions.intake import DuplicateSubmission, IntakeRefused, submission_intake
from tests.benchmark.factories import AgentFactory, TaskFactory
from tests.benchmark.runs import PAPER, SAMPLE_TASK, zip_entries

LIMITS = IntakeLimits(
    max_archive_bytes=512 * 1024 * 1024,
    max_unpacked_bytes=2 * 1024**3,
    max_entries=100,
    max_ratio=200,
    max_depth=16,
    max_nested_archives=0,
)


class _Zeros(io.RawIOBase):
    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = b"\0" * n
        self.left -= n
        return n


def _junk_bomb(path: Path, size: int) -> Path:
    """A tar.gz whose only large member is macOS junk the intake skips."""
    with tarfile.open(path, "w:gz", compresslevel=9) as archive:
        info = tarfile.TarInfo("results/paper.md")
        info.size = len(PAPER)
        archive.addfile(info, io.BytesIO(PAPER))
        junk = tarfile.TarInfo("__MACOSX/results/._zeros.bin")
        junk.size = size
        archive.addfile(junk, io.BufferedReader(_Zeros(size)))
    return path


def test_bytes_of_skipped_junk_count_against_the_ratio(tmp_path):
    bomb = _junk_bomb(tmp_path / "bomb.tar.gz", 32 * 1024 * 1024)

    with pytest.raises(ArchiveRefused, match="compression bomb"):
        archive_unpack(source=bomb, dest=tmp_path / "out", limits=LIMITS)


def test_bytes_of_skipped_junk_count_against_the_unpacked_size(tmp_path):
    bomb = _junk_bomb(tmp_path / "bomb.tar.gz", 8 * 1024 * 1024)
    limits = replace(LIMITS, max_ratio=10**9, max_unpacked_bytes=4 * 1024 * 1024)

    with pytest.raises(ArchiveRefused, match="unpacks to more than 4 MiB"):
        archive_unpack(source=bomb, dest=tmp_path / "out", limits=limits)


def test_a_tar_gz_is_inflated_in_bounded_memory(tmp_path):
    bomb = _junk_bomb(tmp_path / "bomb.tar.gz", 96 * 1024 * 1024)
    limits = replace(LIMITS, max_ratio=10**9)
    (tmp_path / "out").mkdir()

    tracemalloc.start()
    try:
        files = archive_unpack(source=bomb, dest=tmp_path / "out", limits=limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert [item.path for item in files] == ["results/paper.md"]
    assert peak < 8 * 1024 * 1024, peak


def test_a_zip_announcing_too_many_entries_is_refused_before_its_directory_is_parsed(
    tmp_path, monkeypatch
):
    entries = {"results/paper.md": PAPER} | {f"data/{n}.txt": b"x" for n in range(30)}
    archive = zip_entries(tmp_path / "many.zip", entries)

    def parse_everything(self):
        raise AssertionError("the whole central directory was parsed")

    monkeypatch.setattr(zipfile.ZipFile, "_RealGetContents", parse_everything)
    with pytest.raises(ArchiveRefused, match="31 entries; the limit is 20"):
        archive_unpack(
            source=archive, dest=tmp_path / "out", limits=replace(LIMITS, max_entries=20)
        )


def test_the_announced_entry_count_is_read_from_the_end_record(tmp_path):
    path = tmp_path / "z64.zip"
    with zipfile.ZipFile(path, "w", allowZip64=True) as archive:
        for n in range(3):
            archive.writestr(f"{n}.txt", b"x")
    assert archives._zip_entry_count(path) == 3


def test_the_non_utf8_message_shows_one_backslash():
    with pytest.raises(ArchiveRefused) as refused:
        name_check("caf\udce9.md", LIMITS)

    assert str(refused.value.message) == "a file name is not valid UTF-8: 'caf\\xe9.md'"
    assert "\\\\" not in refused.value.message


@pytest.mark.django_db
def test_the_format_is_checked_before_the_duplicate(media_root, tmp_path):
    agent, task = AgentFactory(), TaskFactory(slug=SAMPLE_TASK)
    idea = tmp_path / "idea.md"
    idea.write_bytes(b"# An idea\n\nText.\n")

    def intake(name: str):
        return submission_intake(
            agent=agent,
            task=task,
            stage="idea",
            archive=idea,
            archive_name=name,
            uploader=None,
            source="upload",
        )

    intake("idea.md")
    with pytest.raises(DuplicateSubmission):
        intake("idea.md")
    with pytest.raises(IntakeRefused, match="not a zip or tar.gz archive or a markdown file"):
        intake("idea.txt")


def _many_small_zeros(path: Path, *, entries: int, size: int, kind: str) -> Path:
    """Issue 32, finding 5: many entries, each under the per-entry ratio floor."""
    zeros = b"\0" * size
    if kind == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
            archive.writestr("results/paper.md", PAPER)
            for number in range(entries):
                archive.writestr(f"results/zeros_{number}.bin", zeros)
    else:
        with tarfile.open(path, "w:gz", compresslevel=9) as archive:
            for number in range(entries):
                info = tarfile.TarInfo(f"results/zeros_{number}.bin")
                info.size = size
                archive.addfile(info, io.BytesIO(zeros))
    return path


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_many_small_entries_count_together_against_the_archives_size(tmp_path, kind):
    # 90 entries of 512 KiB zeros: 45 MiB from an archive of a few dozen KiB.
    bomb = _many_small_zeros(tmp_path / f"bomb.{kind}", entries=90, size=512 * 1024, kind=kind)
    assert bomb.stat().st_size * LIMITS.max_ratio < 45 * 1024 * 1024

    with pytest.raises(ArchiveRefused, match="compression bomb"):
        archive_unpack(source=bomb, dest=tmp_path / "out", limits=LIMITS)
