"""The scoring step of MLRC-Bench's main.py, run by the site in a second sandbox.

Its folder is a fresh copy of the task version (the test data and test
constants for the test phase, the label files, the task's own methods/) with
the method step's output/ files in output/; none of the method's code is
there or imported. It calls the task's `get_score(Method, phase)` and saves
the evaluation with `save_evals`' fields in output/idea_evals.json. `Method`
is a stand-in with the method's name: MLRC-Bench's `get_score` reads the
method's outputs, not the method.
"""

import argparse
import os
import sys


class MethodStandIn:
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


def _number(name: str):
    try:
        return float(os.environ.get(name, ""))
    except ValueError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-m", "--method", type=str, required=True)
    parser.add_argument("-p", "--phase", type=str, default="dev")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())

    from evaluation import get_score
    from MLAgentBench.utils import evals_append

    # time for running evaluation should not be counted in runtime of method
    score = get_score(MethodStandIn(args.method), args.phase)
    complexity = _number("MLRC_METHOD_COMPLEXITY")
    base = _number("MLRC_BASE_COMPLEXITY")
    evals_append(
        task_name=os.environ.get("MLRC_TASK", ""),
        method_name=args.method,
        phase=args.phase,
        score=score,
        runtime=_number("MLRC_METHOD_RUNTIME"),
        method_complexity=int(complexity) if complexity is not None else None,
        base_complexity=int(base) if base is not None else None,
    )


if __name__ == "__main__":
    main()
