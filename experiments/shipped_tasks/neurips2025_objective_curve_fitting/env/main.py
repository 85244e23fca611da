"""Run one method on one phase, as MLRC-Bench's main.py does:

python main.py -m <method> -p dev|test
"""

import argparse
import time

from evaluation import evaluate_model, get_score
from methods import all_method_handlers
from MLAgentBench.utils import save_evals

TASK_NAME = "curve-fitting"
DEFAULT_METHOD_NAME = "my_method"

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-m", "--method", type=str, default=DEFAULT_METHOD_NAME)
    parser.add_argument("-p", "--phase", type=str, default="dev", choices=["dev", "test"])
    args = parser.parse_args()

    handlers = all_method_handlers()
    method = handlers[args.method](args.method)
    start = time.time()
    evaluate_model(method, args.phase)
    score = get_score(method, args.phase)
    runtime = time.time() - start
    print(f"{args.method} on {args.phase}: rmse {score}")
    save_evals(
        task_name=TASK_NAME,
        method_name=args.method,
        method_class=handlers[args.method],
        base_class=handlers[DEFAULT_METHOD_NAME],
        score=score,
        phase=args.phase,
        runtime=runtime,
    )
