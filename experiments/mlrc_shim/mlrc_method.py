"""The method step of MLRC-Bench's main.py, run by the site in the method's sandbox.

main.py runs `evaluate_model(method, phase)` then `get_score(method, phase)` in
one process, so a method's code could change the score it is given. The site
runs the two halves apart: this step (the method's code, no label files in
its folder) does what main.py does up to and including `evaluate_model`, and
times it as main.py does; `mlrc_score.py` then runs the task's own
`get_score` in a second sandbox that alone has the labels and none of the
method's code. What this step reports (runtime, logical lines) comes from the
method's process, as in MLRC-Bench; the score never does.
"""

import argparse
import json
import os
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-m", "--method", type=str, required=True)
    parser.add_argument("-p", "--phase", type=str, default="dev")
    args = parser.parse_args()
    # As `python main.py` in env/: the task's folder first on the path.
    sys.path.insert(0, os.getcwd())
    os.makedirs("output", exist_ok=True)  # `save_evals` assume that `output/` folder exists

    from evaluation import evaluate_model
    from methods import all_method_handlers
    from MLAgentBench.utils import calculate_complexity

    loaded_methods = all_method_handlers()
    curr_method = loaded_methods[args.method](args.method)
    start_time = time.time()
    evaluate_model(curr_method, args.phase)
    runtime = time.time() - start_time
    baseline = os.environ.get("MLRC_BASELINE_METHOD", "my_method")
    report = {
        "runtime": runtime,
        "method_complexity": calculate_complexity(loaded_methods[args.method]),
        "base_complexity": calculate_complexity(loaded_methods.get(baseline, object)),
    }
    with open(os.path.join("output", ".mlrc_method_run.json"), "w", encoding="utf-8") as handle:
        json.dump(report, handle)


if __name__ == "__main__":
    main()
