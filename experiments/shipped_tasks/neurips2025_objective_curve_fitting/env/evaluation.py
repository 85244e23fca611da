"""Run a method on a phase's inputs and score its predictions (RMSE, lower is better)."""

import csv
import math
import os

from constants import DATA_DIR, OUTPUT_DIR


def _read(path: str, column: str) -> dict[int, float]:
    with open(path, newline="") as handle:
        return {int(row["id"]): float(row[column]) for row in csv.DictReader(handle)}


def _train() -> list[tuple[float, float]]:
    with open(os.path.join(DATA_DIR, "train.csv"), newline="") as handle:
        return [(float(row["x"]), float(row["y"])) for row in csv.DictReader(handle)]


def evaluate_model(method, phase: str) -> None:
    """Predict the phase's inputs with the method; writes output/<phase>_predictions.csv."""
    inputs = _read(os.path.join(DATA_DIR, f"{phase}_inputs.csv"), "x")
    ids = sorted(inputs)
    predictions = method.run(_train(), [inputs[i] for i in ids])
    if len(predictions) != len(ids):
        raise ValueError(f"{len(ids)} inputs but {len(predictions)} predictions")
    os.makedirs(OUTPUT_DIR, exist_ok=True)
    with open(os.path.join(OUTPUT_DIR, f"{phase}_predictions.csv"), "w") as handle:
        handle.write("id,y\n")
        for i, y in zip(ids, predictions, strict=True):
            handle.write(f"{i},{float(y)}\n")


def get_score(method, phase: str) -> float:
    """The RMSE of the method's predictions against the phase's labels."""
    labels = _read(os.path.join(DATA_DIR, f"{phase}_labels.csv"), "y")
    predictions = _read(os.path.join(OUTPUT_DIR, f"{phase}_predictions.csv"), "y")
    errors = [predictions[i] - labels[i] for i in labels]
    return math.sqrt(sum(e * e for e in errors) / len(errors))
