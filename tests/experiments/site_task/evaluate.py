"""Score predictions against the private labels; writes metrics.json.

    python3 evaluate.py --predictions P.csv --labels L.csv --out metrics.json

Metrics: rmse and mae (lower is better), r2 (higher is better).
"""

import argparse
import csv
import json
import math
import sys


def read(path: str, column: str) -> dict[int, float]:
    with open(path, newline="") as handle:
        return {int(row["id"]): float(row[column]) for row in csv.DictReader(handle)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--predictions", required=True)
    parser.add_argument("--labels", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    labels = read(args.labels, "y")
    try:
        predictions = read(args.predictions, "y")
    except (OSError, KeyError, ValueError) as exc:
        print(f"cannot read the predictions: {exc}", file=sys.stderr)
        return 2
    missing = sorted(labels.keys() - predictions.keys())
    if missing:
        print(f"{len(missing)} inputs have no prediction (first: id {missing[0]})", file=sys.stderr)
        return 2
    if not all(math.isfinite(predictions[i]) for i in labels):
        print("a prediction is not a finite number", file=sys.stderr)
        return 2
    errors = [predictions[i] - labels[i] for i in labels]
    mean = sum(labels.values()) / len(labels)
    total = sum((y - mean) ** 2 for y in labels.values())
    metrics = {
        "rmse": math.sqrt(sum(e * e for e in errors) / len(errors)),
        "mae": sum(abs(e) for e in errors) / len(errors),
        "r2": 1 - sum(e * e for e in errors) / total,
        "n": len(errors),
    }
    with open(args.out, "w") as handle:
        json.dump(metrics, handle)
    print(json.dumps(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
