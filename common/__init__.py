"""Pieces every app shares. Imports Django and DRF only, never an app."""
