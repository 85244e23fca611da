"""Prepare the curve-fitting task's data: deterministic, standard library only.

    python3 scripts/prepare.py        (from the task folder)

writes env/data/ (train.csv, dev_inputs.csv, dev_labels.csv: what every run
sees) and scripts/test_data/ (test_inputs.csv, test_labels.csv: copied into
env/data/ for the test phase only, as MLRC-Bench does).
"""

import csv
import math
import random
import sys
from pathlib import Path

SEED = 20250
TRAIN, DEV, TEST = 300, 200, 500
NOISE = 0.2


def target(x: float) -> float:
    return math.sin(3 * x) + 0.5 * x + 0.3 * math.cos(7 * x) * math.exp(-x * x)


def sample(rng: random.Random, n: int) -> list[tuple[float, float]]:
    points = []
    for _ in range(n):
        x = rng.uniform(-2.0, 2.0)
        points.append((x, target(x) + rng.gauss(0.0, NOISE)))
    return points


def write(path: Path, header: list[str], rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def main(task: Path) -> None:
    rng = random.Random(SEED)
    train = sample(rng, TRAIN)
    splits = {
        "dev": (sample(rng, DEV), task / "env" / "data"),
        "test": (sample(rng, TEST), task / "scripts" / "test_data"),
    }
    write(
        task / "env" / "data" / "train.csv",
        ["x", "y"],
        [(f"{x:.6f}", f"{y:.6f}") for x, y in train],
    )
    for phase, (points, folder) in splits.items():
        write(
            folder / f"{phase}_inputs.csv",
            ["id", "x"],
            [(i, f"{x:.6f}") for i, (x, _) in enumerate(points)],
        )
        write(
            folder / f"{phase}_labels.csv",
            ["id", "y"],
            [(i, f"{y:.6f}") for i, (_, y) in enumerate(points)],
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
