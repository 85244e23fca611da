"""Pieces every app shares; imports Django and DRF only, never an app."""
