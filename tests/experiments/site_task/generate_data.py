"""Generate the curve-fitting task's data: deterministic, standard library only.

    python3 generate_data.py OUT

writes OUT/dev/{public,private}/ and OUT/test/{public,private}/:
public/train.csv (x,y) and public/inputs.csv (id,x) for the method,
private/labels.csv (id,y) for the evaluation only.
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


def main(out: Path) -> None:
    rng = random.Random(SEED)  # noqa: S311 - seeded task data, not secrets
    train = sample(rng, TRAIN)
    splits = {"dev": sample(rng, DEV), "test": sample(rng, TEST)}
    for split, points in splits.items():
        write(
            out / split / "public" / "train.csv",
            ["x", "y"],
            [(f"{x:.6f}", f"{y:.6f}") for x, y in train],
        )
        write(
            out / split / "public" / "inputs.csv",
            ["id", "x"],
            [(i, f"{x:.6f}") for i, (x, _) in enumerate(points)],
        )
        write(
            out / split / "private" / "labels.csv",
            ["id", "y"],
            [(i, f"{y:.6f}") for i, (_, y) in enumerate(points)],
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
