"""A GPU worker that shares no disk with the web host: it reads the submission
from the S3 bucket (the loopback moto server), runs it in the sandbox in its
own work folder, and writes the live log and the outputs back to the bucket,
where the web side reads them."""

import os
import shutil
import tempfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from experiments.models import ExperimentRun, ExperimentStatus, ReproductionVerdict
from experiments.selectors import experiment_log_chunk
from submissions.models import ArtifactKind
from tests.experiments.factories import submission_with_files

pytestmark = pytest.mark.backends

RUN_SH = """for i in 1 2 3; do echo step $i; sleep 0.3; done
mkdir -p results
echo '{"score": 0.625}' > results/results.json
echo score 0.625
"""
PAPER = "| Method | Score |\n| --- | --- |\n| Ours | 0.625 |\n"


@pytest.fixture
def worker_host_root():
    """The GPU host's own disk: its MEDIA_ROOT and work root, nothing shared."""
    root = Path(tempfile.mkdtemp(prefix="mlrbench-gpu-host-", dir="/tmp"))
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def local_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.django_db(transaction=True)
def test_a_gpu_worker_without_the_web_hosts_disk_runs_a_reproduction_check_through_s3(
    s3_storage, experiment_settings, media_root, worker_host_root, celery_worker_process
):
    # s3_storage first: a later settings override would hide experiment_settings.worker_env.
    host_media = worker_host_root / "media"
    host_media.mkdir()
    env = {
        **experiment_settings.worker_env,
        "MEDIA_ROOT": str(host_media),
        "EXPERIMENT_WORK_ROOT": str(worker_host_root / "work"),
        "EXPERIMENT_LOG_PUBLISH_SECONDS": "0.2",
    }
    celery_worker_process("gpu", env=env)
    honest = submission_with_files(
        {"run.sh": RUN_SH, "paper.md": PAPER}, kinds={"paper.md": ArtifactKind.PAPER}
    )
    out = StringIO()

    # --wait follows the log, which the web side reads from the bucket.
    call_command(
        "run_experiment", f"--submission={honest.pk}", "--phase=repro", "--wait", stdout=out
    )

    text = out.getvalue()
    assert "step 1\nstep 2\nstep 3\nscore 0.625" in text
    assert "reproduction: reproduced" in text
    run = ExperimentRun.objects.get(submission=honest)
    assert run.status == ExperimentStatus.SUCCEEDED
    assert run.reproduction.verdict == ReproductionVerdict.REPRODUCED
    keys = s3_storage.keys(f"experiments/{run.pk}/")
    assert f"experiments/{run.pk}/log.txt" in keys
    assert f"experiments/{run.pk}/outputs/results/results.json" in keys
    chunk = experiment_log_chunk(run=run, offset=0)
    assert "score 0.625" in chunk.text and chunk.finished
    # Neither host kept an artifact on its own disk.
    assert local_files(host_media) == []
    assert local_files(media_root) == []
    assert not (worker_host_root / "work").exists() or not local_files(worker_host_root / "work")


def test_the_live_log_is_published_to_the_bucket_as_it_grows(s3_storage, settings, tmp_path):
    from common.storage import object_read
    from experiments.stored_log import StoredLog

    settings.EXPERIMENT_LOG_PUBLISH_SECONDS = 0
    with StoredLog(name="experiments/7/log.txt", local=tmp_path / "log.txt") as log:
        log.write(b"step 1\n")
        log.flush()
        # A reader on another host sees the first line while the run goes on.
        assert object_read("experiments/7/log.txt") == b"step 1\n"
        settings.EXPERIMENT_LOG_PUBLISH_SECONDS = 3600
        log.write(b"step 2\n")
        log.flush()
        assert object_read("experiments/7/log.txt") == b"step 1\n"  # not due yet
    # Closing publishes the rest, whatever the interval.
    assert object_read("experiments/7/log.txt") == b"step 1\nstep 2\n"
    assert s3_storage.keys() == ["experiments/7/log.txt"]
