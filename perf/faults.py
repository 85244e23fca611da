"""The fault drill as the probe ran it, three times, beside the round's figures.

Each run (tests/judging/fault_drill.py): `--judgments` judgments (116, the
sample's) re-judged by two loopback judges whose model answers in `--answer`
seconds (1) and fails `--errors` of the time (30%: 429, 500, garbage), two
thread-pool workers and beat on a Redis of the script's own and PostgreSQL.
Mid-run a worker is SIGKILLed (a new one starts), Redis restarts (two seconds
down, its queue lost) and the workers' connections are terminated. Everything
else is the site's defaults, as in production: the judgment lease
(JUDGE_LEASE_STALE_SECONDS 180, heartbeat every 30 s), the judge task's limits
(600 / 720 s), the resend interval (900 s); only JUDGE_REAP_INTERVAL_SECONDS is
the probe's 20. No command by hand.

Printed per run: done, still running or queued ("stuck"), judgments scored
twice ("duplicated"), judgments whose usable review was paid twice, the time
to the last judgment, and anything a worker or beat logged that must never
happen (an unrecoverable error, a scheduling error, a worker that exited).
Beside them, the round's figures: 108 and 106 of 116 done, 8 and 10 stuck,
0 duplicated, at 609 s. Goal: 116 of 116 done exactly once in every run,
within 600 s of the faults.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mlrbench \\
    REDIS_URL=redis://127.0.0.1:6379/3 .venv/bin/python perf/faults.py

`--smoke` runs one drill of 20 judgments with a 12-second lease (answers in
0.2 s) and fails only if the script breaks.
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

ROUND_BEFORE = "the round's probe: 108 and 106 of 116 done, 8 and 10 stuck, 0 duplicated, 609 s"


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgments", type=int, default=116)
    parser.add_argument("--answer", type=float, default=1.0, help="the model's answer time, s")
    parser.add_argument("--errors", type=float, default=0.3, help="share of bad answers")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stale", type=int, default=180, help="JUDGE_LEASE_STALE_SECONDS")
    parser.add_argument("--heartbeat", type=int, default=30, help="JUDGE_HEARTBEAT_SECONDS")
    parser.add_argument("--reap-interval", type=int, default=20)
    parser.add_argument("--deadline", type=float, default=900.0, help="give up after, s")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: does the script run?")
    args = parser.parse_args()
    if args.smoke:
        args.judgments, args.answer, args.runs = 20, 0.2, 1
        args.stale, args.heartbeat, args.reap_interval, args.deadline = 12, 2, 2, 240.0
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

    print(f"creating a test database next to {connection.settings_dict['NAME']} ...", flush=True)
    old_config = setup_databases(verbosity=0, interactive=False)
    results = []
    try:
        for run in range(args.runs):
            options = DrillOptions(
                judgments=args.judgments,
                answer_seconds=args.answer,
                error_share=args.errors,
                reap_interval=args.reap_interval,
                stale_seconds=args.stale,
                heartbeat_seconds=args.heartbeat,
                soft_limit=600,
                deadline_seconds=args.deadline,
                seed=run + 1,
            )
            drill = FaultDrill(options, media_root=MEDIA)
            try:
                result = drill.run(faults=True)
            finally:
                drill.close()
            results.append(result)
            _print_run(run + 1, args.judgments, result)
    finally:
        connection.close()
        teardown_databases(old_config, verbosity=0)
    print(f"\nbeside {ROUND_BEFORE}")
    every = all(result.all_done_once and not result.problems for result in results)
    print(
        f"every judgment done exactly once in every run, nothing logged: {'yes' if every else 'NO'}"
    )
    if not every and not args.smoke:
        sys.exit(1)


def _print_run(n: int, judgments: int, result) -> None:
    done = result.statuses.get("done", 0)
    stuck = sum(count for status, count in result.statuses.items() if status != "done")
    duplicated = result.scored_twice
    print(
        f"run {n}: {done} of {judgments} done, {stuck} stuck, {duplicated} duplicated, "
        f"{result.reviews_paid_twice} paid twice, last at {result.seconds:.0f} s "
        f"({result.statuses})",
        flush=True,
    )
    for fault in result.faults:
        print(f"    - {fault}")
    for problem in result.problems:
        print(f"    ! {problem}")


if __name__ == "__main__":
    main()
