"""Command-line client of an MLR-Bench site (standard library only)."""

__version__ = "0.1.0"
