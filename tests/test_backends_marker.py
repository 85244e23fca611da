"""CI's second leg (S3 storage, RabbitMQ as the broker) runs only the tests
marked `backends`. This lists the tests left out of it that use a worker, the
S3 server or the artifact store: a new worker or storage test without the
marker fails here instead of silently never running on S3 and RabbitMQ."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import AUDIT_ENV, BACKEND_FIXTURES, PROJECT_ROOT, UNMARKED_BACKEND_TESTS

TESTS = PROJECT_ROOT / "tests"


def _collected_everything(request) -> bool:
    files = {Path(str(item.path)) for item in request.session.items}
    return all(path in files for path in TESTS.rglob("test_*.py"))


def _unmarked_in_a_fresh_collection(tmp_path) -> dict[str, list[str]]:
    report = tmp_path / "audit.json"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=PROJECT_ROOT,
        env={**os.environ, AUDIT_ENV: str(report)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    audit = json.loads(report.read_text())
    assert audit["collected"] > 100, audit
    return audit["unmarked"]


def test_every_test_that_uses_a_worker_or_storage_runs_on_the_second_leg(request, tmp_path):
    if _collected_everything(request):
        # The whole suite is collected (CI's first leg): its collection says it.
        unmarked = request.config.stash[UNMARKED_BACKEND_TESTS]
    else:
        unmarked = _unmarked_in_a_fresh_collection(tmp_path)
    listing = "\n".join(f"  {test} uses {', '.join(used)}" for test, used in unmarked.items())
    assert not unmarked, (
        f"tests that use {sorted(BACKEND_FIXTURES)} without @pytest.mark.backends "
        f"(CI's S3 + RabbitMQ leg would skip them):\n{listing}"
    )
