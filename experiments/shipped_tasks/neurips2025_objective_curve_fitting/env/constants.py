"""Where the task keeps its data and writes its outputs (relative to env/)."""

DATA_DIR = "data"
OUTPUT_DIR = "output"
