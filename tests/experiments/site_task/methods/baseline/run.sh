#!/bin/sh
# The method reads $DATA_DIR and writes $OUTPUT_DIR/predictions.csv.
exec python3 method.py
