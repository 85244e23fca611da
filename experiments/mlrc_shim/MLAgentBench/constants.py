"""MLRC-Bench's per-task constants, filled from the task as the site imported it.

Upstream these are tables keyed by task name; here the one task being run is
known from the sandbox's environment (MLRC_TASK, MLRC_BASELINE_SCORE,
MLRC_BASELINE_RUNTIME, MLRC_HUMAN_SCORE).
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
