"""MLRC-Bench's `MLAgentBench.constants`, filled from the task as the site imported it.

Upstream these are tables keyed by task name; here the one task being run is
known from the sandbox's environment (MLRC_TASK, MLRC_BASELINE_SCORE,
MLRC_BASELINE_RUNTIME, MLRC_HUMAN_SCORE). `MLR_BENCH_DIR` means what it means
upstream (the checkout holding the benchmark, from the environment variable of
that name); in the sandbox it is the stand-in's own folder.
"""

import os


def _number(name: str):
    value = os.environ.get(name, "")
    try:
        return float(value)
    except ValueError:
        return None


TASK_NAME = os.environ.get("MLRC_TASK", "")
_PHASES = ("dev", "test", "debug")
ALL_BASE_PERFORMANCE = {TASK_NAME: dict.fromkeys(_PHASES, _number("MLRC_BASELINE_SCORE"))}
ALL_BASE_RUNTIME = {TASK_NAME: dict.fromkeys(_PHASES, _number("MLRC_BASELINE_RUNTIME"))}
ALL_HUMAN_PERFORMANCE = {TASK_NAME: dict.fromkeys(_PHASES, _number("MLRC_HUMAN_SCORE"))}
MLR_BENCH_DIR = os.getenv(
    "MLR_BENCH_DIR", os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)
