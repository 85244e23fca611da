"""Archives for the intake tests, built in the test from the sample runs or
from scratch (the bad ones)."""

import io
import tarfile
import zipfile
from pathlib import Path

SAMPLE_TASK = "iclr2025_bi_align"


def sample_run(mlrbench_data: Path, agent: str = "codex") -> Path:
    return mlrbench_data / "agent_results" / f"end2end_{agent}" / SAMPLE_TASK


def sample_submission(mlrbench_data: Path, tmp_path: Path, agent: str = "claude"):
    """The sample's end-to-end run of `agent` on SAMPLE_TASK, uploaded as its agent's
    zip through the intake (the browser tests' Claude Code paper and trace)."""
    from submissions.intake import submission_intake
    from tests.benchmark.factories import AgentFactory, TaskFactory

    return submission_intake(
        agent=AgentFactory(name=agent),
        task=TaskFactory(slug=SAMPLE_TASK),
        stage="end2end",
        archive=zip_folder(sample_run(mlrbench_data, agent), tmp_path / "run.zip"),
        archive_name="run.zip",
        uploader=None,
        source="api",
    )


def zip_folder(folder: Path, target: Path, *, prefix: str = "") -> Path:
    """Zip a run folder, as an agent builder would (`zip -r run.zip run/`)."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, prefix + path.relative_to(folder).as_posix())
    return target


def tar_folder(folder: Path, target: Path, *, prefix: str = "") -> Path:
    with tarfile.open(target, "w:gz") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.add(path, prefix + path.relative_to(folder).as_posix())
    return target


def zip_entries(target: Path, entries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return target


def tar_entries(target: Path, entries: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    with tarfile.open(target, "w:gz") as archive:
        for entry in entries:
            if isinstance(entry, tarfile.TarInfo):
                archive.addfile(entry)
            else:
                name, data = entry
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return target


PAPER = b"# A paper\n\nWith a result.\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
