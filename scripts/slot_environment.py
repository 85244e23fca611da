"""`export` lines for parallel slot N's own services, by the rule a parallel
test run's workers follow (mlrbench_site.settings.test.xdist_worker_environment,
as worker gwN): its Redis database and broker, a range of sandbox uids (a job's
end sweeps every process of its slot's uid, so two slots must never share one)
and an experiment work root. `.ci/run` runs the perf smoke scripts two at a
time with it: eval "$(python scripts/slot_environment.py N)"."""

import os
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("SECRET_KEY", "slot-environment-only")

from mlrbench_site.settings import test  # noqa: E402 - after the path and the key

if __name__ == "__main__":
    moved = test.xdist_worker_environment(test.services_now(), f"gw{int(sys.argv[1])}")
    moved.pop("MLRBENCH_TEST_WORKER")  # a perf script is no test worker
    for name, value in sorted(moved.items()):
        print(f"export {name}={shlex.quote(value)}")
