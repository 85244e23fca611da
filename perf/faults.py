"""The judge queue's drain time with faults against the same run without them.

Two drills of `--judgments` judgments each (tests/judging/fault_drill.py): real
Celery worker processes on a thread pool and beat, on a Redis of the script's
own, against the loopback model answering `--errors` of 429, 500 and garbage.
The second drill kills a worker with SIGKILL (a new one starts), restarts the
Redis (two seconds down, its queue lost) and terminates the workers'
PostgreSQL connections, at 20%, 35% and 50% of the judgments done. Printed:
each drill's time from the first message to the last judgment done, and the
ratio. No goal but the drill's own: every judgment done exactly once, with no
command by hand (the fault drill's recovery waits for the judge task's hard
limit, `--hard-limit`, for the killed worker's runs).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mlrbench \\
    REDIS_URL=redis://127.0.0.1:6379/3 .venv/bin/python perf/faults.py

`--smoke` runs 20 judgments each and fails only if the script breaks.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("SECRET_KEY", "perf-only-secret-key")
MEDIA = tempfile.mkdtemp(prefix="mlrbench-perf-media-")
os.environ["MEDIA_ROOT"] = MEDIA
os.environ["TEST_JUDGE_KEY"] = "sk-test-judge-key"
# The key policy (common/llm_policy.py): this test key may go to the loopback model server.
os.environ["LLM_KEY_ENV_ALLOW"] = "TEST_JUDGE_KEY"
os.environ["LLM_KEY_HOSTS"] = "TEST_JUDGE_KEY=127.0.0.1"


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgments", type=int, default=300)
    parser.add_argument("--errors", type=float, default=0.3, help="share of bad answers")
    parser.add_argument("--hard-limit", type=int, default=40, help="judge task's hard limit, s")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: does the script run?")
    args = parser.parse_args()
    if args.smoke:
        args.judgments = 20
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("set DATABASE_URL (PostgreSQL: the drill terminates its connections)")
    return args


def main() -> None:
    args = _arguments()
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    # Imported by name: the tests are not type-checked (pyproject's mypy exclude).
    drill_module = importlib.import_module("tests.judging.fault_drill")
    DrillOptions, FaultDrill = drill_module.DrillOptions, drill_module.FaultDrill  # noqa: N806

    options = DrillOptions(
        judgments=args.judgments,
        error_share=args.errors,
        hard_limit=args.hard_limit,
        soft_limit=min(10, args.hard_limit - 30),
    )
    print(f"creating a test database next to {connection.settings_dict['NAME']} ...", flush=True)
    old_config = setup_databases(verbosity=0, interactive=False)
    results = {}
    try:
        for faults in (False, True):
            drill = FaultDrill(options, media_root=MEDIA)
            try:
                results[faults] = drill.run(faults=faults)
            finally:
                drill.close()
    finally:
        connection.close()
        teardown_databases(old_config, verbosity=0)
    calm, stormy = results[False], results[True]
    print(f"\n{args.judgments} judgments, {args.errors:.0%} bad answers, 2 workers x 8 threads")
    print(f"  without faults: {calm.seconds:7.1f} s   {calm.statuses}")
    print(f"  with faults:    {stormy.seconds:7.1f} s   {stormy.statuses}")
    for fault in stormy.faults:
        print(f"    - {fault}")
    print(f"  drain time with faults / without: {stormy.seconds / max(calm.seconds, 1e-9):.2f}x")
    every = calm.all_done_once and stormy.all_done_once
    print(f"  every judgment done exactly once in both: {'yes' if every else 'NO'}")
    if not every and not args.smoke:
        sys.exit(1)


if __name__ == "__main__":
    main()
