"""The sandbox's disk limit is held by the kernel (issue 20, finding 5): no
path structure escapes it, and the write that would cross it fails."""

import pytest
from django.conf import settings

from experiments.models import ExperimentLimit, ExperimentStatus
from sandbox import WorkDisk

from .test_sandbox import assert_worker_healthy, log_of, run_code

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not WorkDisk.available(), reason="the work disk needs root"),
]


@pytest.fixture(autouse=True)
def _settings(experiment_settings):
    return experiment_settings


def test_files_under_paths_longer_than_path_max_count_against_the_disk_limit():
    limit = settings.SANDBOX_DISK_BYTES
    run = run_code(
        f"""
        import os
        os.chdir("/work")
        for _ in range(40):  # /work/dddd.../dddd...: far past 4,096 characters
            os.mkdir("d" * 200)
            os.chdir("d" * 200)
        written = 0
        try:
            for n in range(64):  # 64 MiB, four times the limit
                with open(f"f{{n}}", "wb") as handle:
                    handle.write(b"x" * (1 << 20))
                written += 1 << 20
        except OSError as exc:
            print("refused after", written, exc.errno)
        assert written <= {limit}, written
        print("total", written)
        """
    )

    assert "refused after" in log_of(run), log_of(run)
    assert "AssertionError" not in log_of(run)
    assert run.limit_hit == ExperimentLimit.DISK
    assert_worker_healthy()


def test_the_write_that_crosses_the_disk_limit_fails():
    limit = settings.SANDBOX_DISK_BYTES
    run = run_code(
        """
        import errno, os
        written = 0
        try:
            with open("/work/big.bin", "wb") as handle:
                while True:
                    handle.write(b"x" * 65536)
                    handle.flush()
                    written += 65536
        except OSError as exc:
            print("ENOSPC" if exc.errno == errno.ENOSPC else exc.errno, written)
            raise SystemExit(3)
        """
    )

    assert run.status == ExperimentStatus.FAILED
    assert run.limit_hit == ExperimentLimit.DISK
    assert "ENOSPC" in log_of(run)
    written = int(log_of(run).split("ENOSPC", 1)[1].split()[0])
    assert written <= limit
